/**
 * What a gateway answered one write, as the failover tests record it under a nemesis, and the
 * bound on the writers still running when the nemesis stops.
 */
export interface WriteOutcome {
  key: string;
  status: number;
  code?: string;
  partition?: number;
  offset?: number;
  token?: string;
}

/** A write's answer as an outcome; one failed in transport is status 0, its error the code. */
export async function writeOutcome(
  key: string,
  answer: Promise<{ status: number; body: unknown }>,
): Promise<WriteOutcome> {
  const settled: { status: number; body: unknown } = await answer.catch((error: unknown) => ({
    status: 0,
    body: { error: { code: String(error) } },
  }));
  if (settled.status !== 200) {
    const body = settled.body as { error?: { code?: string } } | null;
    return { key, status: settled.status, code: body?.error?.code };
  }
  return {
    key,
    status: 200,
    ...(settled.body as { partition: number; offset: number; token: string }),
  };
}

/** Waits for `work`, or throws `message` after `msMax`. */
export async function withinMs<T>(work: Promise<T>, msMax: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(message)), msMax);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
