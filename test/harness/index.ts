/** The test harness: see README.md beside this file. */
export * from './free-port.js';
export * from './log-batches.js';
export * from './random.js';
export * from './spawn-node.js';
export * from './temp-dir.js';
export * from './serve-fixture.js';
export * from './stall-proxy.js';
export * from './embedded.js';
export * from './replica-feed.js';
export * from './keys.js';
export * from './kafka-face.js';
export * from './serve-contents.js';
export * from './intercept-log.js';
