// Proves a log level the logger does not know is refused with a message naming the variable to
// fix (pino's own error named a "custom level" the operator never set).
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logger.js';

describe('createLogger', () => {
  it('refuses an unknown level naming TAILBASE_LOG_LEVEL and the levels it takes', () => {
    expect(() => createLogger('test', 'verbose')).toThrow(
      /TAILBASE_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, not verbose/,
    );
    expect(createLogger('test', 'silent').level).toBe('silent');
  });
});
