// Types of the manager's API, all derived from the generated schema (no hand-written DTOs).
import type { paths } from './schema';

export type Paths = paths;

type Ok<R> = R extends { 200: { content: { 'application/json': infer T } } }
  ? T
  : R extends { 201: { content: { 'application/json': infer T } } }
    ? T
    : R extends { 202: { content: { 'application/json': infer T } } }
      ? T
      : never;

/** The JSON body of a successful GET on path. */
export type GetResult<P extends keyof Paths> = Paths[P] extends { get: { responses: infer R } } ? Ok<R> : never;
/** The JSON body of a successful POST on path. */
export type PostResult<P extends keyof Paths> = Paths[P] extends { post: { responses: infer R } } ? Ok<R> : never;
/** The query parameters of a GET on path. */
export type GetQuery<P extends keyof Paths> = Paths[P] extends { get: { parameters: { query?: infer Q } } }
  ? NonNullable<Q>
  : never;
/** One item of an array type. */
export type Item<A> = NonNullable<A> extends readonly (infer T)[] ? T : never;

export type Whoami = GetResult<'/api/v1/whoami'>;
export type Fleet = GetResult<'/api/v1/fleet'>;
export type FleetCell = Item<Fleet['cells']>;
export type FleetCluster = Item<Fleet['clusters']>;
export type FleetOperator = Item<Fleet['operators']>;
export type UIConfig = GetResult<'/api/v1/ui/config'>;
export type ApiErrorBody = { code?: string; message?: string; details?: { [key: string]: unknown } };
