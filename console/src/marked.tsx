/** A highlighted text with its matches in <mark>, built as text nodes: no markup of the document's. */
import { markedParts } from '../../client/format.js';

export function Marked({ text }: { text: string }) {
  return (
    <>{markedParts(text).map((part) => (part.match ? <mark>{part.text}</mark> : part.text))}</>
  );
}
