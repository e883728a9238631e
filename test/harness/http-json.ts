/** One HTTP call of a test, bounded in time, answered as its status and JSON body ({} if empty). */
export async function httpJson(
  url: string,
  init: RequestInit = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(15_000) });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : {} };
}
