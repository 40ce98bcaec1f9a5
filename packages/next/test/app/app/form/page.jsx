import { Form } from './form';

export default function Page() {
  return <Form />;
}
