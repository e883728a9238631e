import type { LogClient } from '../../shared/log-api.js';

/**
 * `log`, but the methods in `overrides` answer in place of its own; the others are its own, bound
 * to it, so a test shapes a call or two of a real log and leaves the rest alone.
 */
export function interceptLog(log: LogClient, overrides: Partial<LogClient>): LogClient {
  return new Proxy(log, {
    get(target, property, receiver) {
      if (Object.hasOwn(overrides, property)) return overrides[property as keyof LogClient];
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });
}
