/** Reads a Prometheus sample (first match) from a server's `/metrics`, or undefined. */
export async function scrapeMetric(url: string, sample: string): Promise<number | undefined> {
  const text = await (await fetch(`${url}/metrics`)).text();
  for (const line of text.split("\n")) {
    if (line.startsWith(`${sample} `)) return Number(line.slice(sample.length + 1));
  }
  return undefined;
}
