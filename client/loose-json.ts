/**
 * Reading JSON whose shape is not guaranteed (another node's status, which evolves on its own):
 * each accessor answers null or an empty list instead of throwing.
 */
export type Loose = Record<string, unknown>;

export const asObject = (value: unknown): Loose =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Loose) : {};

export const objects = (value: unknown): Loose[] =>
  Array.isArray(value)
    ? value.filter((v): v is Loose => typeof v === 'object' && v !== null && !Array.isArray(v))
    : [];

export const num = (value: unknown) =>
  typeof value === 'number' && Number.isFinite(value) ? value : null;

export const bool = (value: unknown) => (typeof value === 'boolean' ? value : null);

export const text = (value: unknown) =>
  typeof value === 'string' ? value : typeof value === 'number' ? String(value) : null;
