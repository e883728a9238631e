# tailbase: one image for every role (`tailbase log-node | serve-node | gateway | start`).

# Production dependencies, with the native modules (better-sqlite3, lmdb) built for this image.
FROM node:20-bookworm-slim AS deps
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts \
 && npm rebuild better-sqlite3 lmdb msgpackr-extract

# The TypeScript build.
FROM deps AS build
RUN npm ci --ignore-scripts && npm rebuild better-sqlite3 lmdb msgpackr-extract
COPY tsconfig.json ./
COPY bin ./bin
COPY shared ./shared
COPY log-node ./log-node
COPY serve-node ./serve-node
COPY gateway ./gateway
COPY views ./views
COPY client ./client
COPY bench ./bench
COPY console ./console
RUN npm run build

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
RUN mkdir /data && chown node:node /data
USER node
VOLUME /data
ENTRYPOINT ["node", "/app/dist/bin/tailbase.js"]
# Binding 0.0.0.0 needs API keys: run with -e TAILBASE_API_KEYS='KEY:read,write,admin'.
CMD ["start", "--data", "/data", "--host", "0.0.0.0"]
