'use client';

import { useActionState } from 'react';
import { send } from './actions';

export function Form() {
  const [state, action] = useActionState(send, null);
  return (
    <form action={action}>
      <button type="submit">Send</button>
      {state && 'rateLimited' in state ? <p role="alert">{state.message}</p> : null}
    </form>
  );
}
