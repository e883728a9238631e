/** Query parameters every node's HTTP API parses the same way, with the same 400s. */
import { badRequest } from './errors.js';

/**
 * A non-negative integer parameter in [min, max]; `fallback` when absent (required when there is
 * none). Anything else, a sign, a fraction or digits past 2^53 included, is 400 `invalid_parameter`.
 */
export function integerParam(
  raw: string | undefined,
  name: string,
  min: number,
  max: number,
  fallback?: number,
): number {
  if (raw === undefined || raw === '') {
    if (fallback === undefined) {
      throw badRequest('invalid_parameter', `${name} is required`, { parameter: name });
    }
    return fallback;
  }
  const value = /^\d{1,16}$/.test(raw) ? Number(raw) : NaN;
  if (!(Number.isSafeInteger(value) && value >= min && value <= max)) {
    throw badRequest('invalid_parameter', `${name} must be an integer in ${min}..${max}`, {
      parameter: name,
      min,
      max,
    });
  }
  return value;
}
