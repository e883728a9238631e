// The public API suite (api-suite.ts) over `tailbase start` as a user runs it: one process from
// the built CLI, the serve-node on its worker thread, bound in-process to the log and gateway.
import { describeApi, embeddedTarget } from './api-suite.js';

describeApi('the API over tailbase start (one process)', () => embeddedTarget(4));
