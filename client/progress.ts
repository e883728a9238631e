/**
 * A progress bar on stderr, drawn only when stderr is a terminal: piped or redirected output
 * stays clean for scripts.
 */
import cliProgress from 'cli-progress';
import type { ClientIo } from './io.js';

export interface Progress {
  update(value: number, payload?: Record<string, unknown>): void;
  setTotal(total: number): void;
  stop(): void;
}

const silent: Progress = { update() {}, setTotal() {}, stop() {} };

export function startProgress(
  io: ClientIo,
  format: string,
  total: number,
  payload: Record<string, unknown> = {},
): Progress {
  if (!io.stderr.isTTY) return silent;
  const bar = new cliProgress.SingleBar(
    {
      format,
      stream: io.stderr as NodeJS.WritableStream,
      hideCursor: true,
      etaBuffer: 50,
      fps: 5,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0, payload);
  return {
    update: (value, more) => bar.update(value, more),
    setTotal: (next) => bar.setTotal(next),
    stop: () => bar.stop(),
  };
}
