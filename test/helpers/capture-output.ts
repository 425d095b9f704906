/**
 * Copies everything this process writes to stdout and stderr into `into` (the lines still go out):
 * the secret-scanning tests read every log line. Returns the function that stops it.
 */
export function captureOutput(into: string[]): () => void {
  const capture = (stream: NodeJS.WriteStream) => {
    const write = stream.write.bind(stream);
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      into.push(String(chunk));
      return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof stream.write;
    return () => {
      stream.write = write;
    };
  };
  const restore = [capture(process.stdout), capture(process.stderr)];
  return () => {
    for (const r of restore) r();
  };
}
