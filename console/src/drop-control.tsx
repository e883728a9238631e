/** Drops a collection after a confirmation: its documents, settings and topic go, for good. */
import { useState } from 'preact/hooks';
import { api } from './api.js';

type Drop =
  | { state: 'idle' }
  | { state: 'confirming' }
  | { state: 'running' }
  | { state: 'failed'; message: string };

export function DropControl({
  collection,
  onDropped,
}: {
  collection: string;
  onDropped: () => void;
}) {
  const [drop, setDrop] = useState<Drop>({ state: 'idle' });
  const run = async () => {
    setDrop({ state: 'running' });
    try {
      await api.drop(collection);
      setDrop({ state: 'idle' });
      onDropped();
    } catch (error) {
      setDrop({ state: 'failed', message: (error as Error).message });
    }
  };
  if (drop.state === 'confirming') {
    return (
      <span>
        Drop {collection} and every document in it?{' '}
        <button type="button" onClick={() => void run()}>
          Confirm drop
        </button>{' '}
        <button type="button" onClick={() => setDrop({ state: 'idle' })}>
          Cancel
        </button>
      </span>
    );
  }
  return (
    <span>
      <button
        type="button"
        disabled={drop.state === 'running'}
        onClick={() => setDrop({ state: 'confirming' })}
      >
        {drop.state === 'running' ? 'Dropping…' : `Drop ${collection}`}
      </button>
      {drop.state === 'failed' && (
        <span role="alert" class="error">
          {' '}
          {drop.message}
        </span>
      )}
    </span>
  );
}
