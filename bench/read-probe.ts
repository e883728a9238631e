/**
 * One client reading paths of a server, one GET at a time with a pause between them, on a worker
 * thread of its own: on the bench's main thread the probe's answers waited behind the loader's
 * own work (reading the corpus, joining 5,000 lines a bulk), and that thread's event loop was
 * late by up to 60 ms at p99 and 185 ms at most during a load, as much as the reads it timed.
 * Each round reads the next path of every group in turn; each group has its own latencies.
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { LatencyHistogram } from './latency-histogram.js';

interface ProbeData {
  url: string;
  /** Paths of each group, read round-robin. */
  groups: string[][];
  pauseMs: number;
  roundsMax: number;
}

export interface ReadProbe {
  /** Ends the probe after its read in flight; its latencies, a histogram a group. */
  stop(): Promise<LatencyHistogram[]>;
  /** Its latencies once it has read `roundsMax` rounds. */
  done: Promise<LatencyHistogram[]>;
}

export function startReadProbe(data: ProbeData): ReadProbe {
  const worker = new Worker(new URL(import.meta.url), { workerData: data });
  const done = new Promise<LatencyHistogram[]>((resolve, reject) => {
    worker.once('message', (latencies: number[][]) => {
      resolve(
        latencies.map((values) => {
          const histogram = new LatencyHistogram();
          for (const ms of values) histogram.recordMs(ms);
          return histogram;
        }),
      );
      void worker.terminate();
    });
    worker.once('error', reject);
  });
  return {
    done,
    stop: () => {
      worker.postMessage('stop');
      return done;
    },
  };
}

async function probe({ url, groups, pauseMs, roundsMax }: ProbeData): Promise<void> {
  const port = parentPort!;
  let stopping = false;
  port.once('message', () => {
    stopping = true;
  });
  const latencies = groups.map((): number[] => []);
  for (let round = 0; round < roundsMax && !stopping; round++) {
    if (round > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    for (const [g, paths] of groups.entries()) {
      const started = performance.now();
      const response = await fetch(`${url}${paths[round % paths.length]}`);
      await response.arrayBuffer();
      latencies[g].push(performance.now() - started);
    }
  }
  port.postMessage(latencies);
}

if (!isMainThread && (workerData as ProbeData | undefined)?.groups !== undefined) {
  await probe(workerData as ProbeData);
}
