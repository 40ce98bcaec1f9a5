import { budget } from '../../../limits';

export const dynamic = 'force-dynamic';

/** `?chunks=n`: n chunks, one every 20 ms; the settle then charges n. */
export const GET = budget((request) => {
  const chunks = Number(new URL(request.url).searchParams.get('chunks') ?? '1');
  let sent = 0;
  const body = new ReadableStream({
    async pull(controller) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      controller.enqueue(new TextEncoder().encode(`chunk ${sent}\n`));
      if (++sent === chunks) controller.close();
    },
  });
  return new Response(body, { headers: { 'Content-Type': 'text/plain' } });
});
