// Reads a text/event-stream response body as {event, data} messages.
export async function readSSE(res: Response, onEvent: (name: string, data: any) => void, signal?: AbortSignal): Promise<void> {
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    if (signal?.aborted) {
      reader.cancel();
      return;
    }
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let k: number;
    while ((k = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, k);
      buf = buf.slice(k + 2);
      let name = 'message';
      let data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) name = line.slice(6).trim();
        else if (line.startsWith('data:')) data += line.slice(5).trim();
      }
      try {
        onEvent(name, JSON.parse(data));
      } catch {
        /* a broken event is skipped */
      }
    }
  }
}
