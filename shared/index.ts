export * from './assert.js';
export * from './batch-codec.js';
export * from './crc32c.js';
export * from './errors.js';
export * from './log-client.js';
export * from './http-server.js';
export * from './logger.js';
