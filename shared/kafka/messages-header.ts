/**
 * The request and response headers, declared like the messages (Kafka's RequestHeader.json and
 * ResponseHeader.json). Request header v1 is the classic one and v2 adds a tagged-fields section;
 * the ClientId stays a classic int16-length string in both, so a broker can read the header of a
 * request whose version it does not know. Response header v0 is the correlation id alone; v1 adds
 * a tagged-fields section.
 */
import type { MessageSpec } from './schema.js';

export const requestHeader = {
  type: 'header',
  name: 'RequestHeader',
  validVersions: '1-2',
  flexibleVersions: '2+',
  fields: [
    { name: 'RequestApiKey', type: 'int16', versions: '0+' },
    { name: 'RequestApiVersion', type: 'int16', versions: '0+' },
    { name: 'CorrelationId', type: 'int32', versions: '0+' },
    {
      name: 'ClientId',
      type: 'string',
      versions: '1+',
      nullableVersions: '1+',
      flexibleVersions: 'none',
    },
  ],
} as const satisfies MessageSpec;

export const responseHeader = {
  type: 'header',
  name: 'ResponseHeader',
  validVersions: '0-1',
  flexibleVersions: '1+',
  fields: [{ name: 'CorrelationId', type: 'int32', versions: '0+' }],
} as const satisfies MessageSpec;
