#!/usr/bin/env node
// Appends fsync in the libuv thread pool; more threads let partitions' group commits overlap.
// It must be set before the first file operation, so the program itself is imported after it.
process.env.UV_THREADPOOL_SIZE ??= '16';
const { main } = await import('./cli.js');
await main(process.argv);
