/**
 * Authentication: SaslHandshake, then SaslAuthenticate carrying the mechanism's own bytes.
 * Transcribed from Apache Kafka's message definitions (validVersions: the versions tailbase
 * supports; the reasons are in PROTOCOL.md).
 */
import type { MessageSpec } from './schema.js';

export const saslHandshakeRequest = {
  apiKey: 17,
  type: 'request',
  name: 'SaslHandshakeRequest',
  validVersions: '0-1',
  flexibleVersions: 'none',
  fields: [{ name: 'Mechanism', type: 'string', versions: '0+' }],
} as const satisfies MessageSpec;

export const saslHandshakeResponse = {
  apiKey: 17,
  type: 'response',
  name: 'SaslHandshakeResponse',
  validVersions: '0-1',
  flexibleVersions: 'none',
  fields: [
    { name: 'ErrorCode', type: 'int16', versions: '0+' },
    { name: 'Mechanisms', type: '[]string', versions: '0+' },
  ],
} as const satisfies MessageSpec;

export const saslAuthenticateRequest = {
  apiKey: 36,
  type: 'request',
  name: 'SaslAuthenticateRequest',
  validVersions: '0-2',
  flexibleVersions: '2+',
  fields: [{ name: 'AuthBytes', type: 'bytes', versions: '0+' }],
} as const satisfies MessageSpec;

export const saslAuthenticateResponse = {
  apiKey: 36,
  type: 'response',
  name: 'SaslAuthenticateResponse',
  validVersions: '0-2',
  flexibleVersions: '2+',
  fields: [
    { name: 'ErrorCode', type: 'int16', versions: '0+' },
    { name: 'ErrorMessage', type: 'string', versions: '0+', nullableVersions: '0+' },
    { name: 'AuthBytes', type: 'bytes', versions: '0+' },
    { name: 'SessionLifetimeMs', type: 'int64', versions: '1+', default: 0 },
  ],
} as const satisfies MessageSpec;
