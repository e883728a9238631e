// The public API suite (api-suite.ts) over `tailbase start` as a user runs it: one process from
// the built CLI, the serve-node on its worker thread, bound in-process to the log and gateway.
import { describeApi } from './api-suite.js';
import { spawnEmbedded } from '../harness/index.js';

describeApi('the API over tailbase start (one process)', async () => {
  const embedded = await spawnEmbedded({ partitions: 4 });
  return {
    url: embedded.url,
    partitions: 4,
    serveNodes: 1,
    stop: async () => void (await embedded.stop()),
  };
});
