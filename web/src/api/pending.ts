// Routes the manager is gaining in this change (the CONTRACTS of issue 20), in the shape
// openapi-typescript generates, until api/manager/openapi.json carries them: then `npm run
// gen:api` puts them in schema.d.ts and this file goes. Nothing else here may describe the API.

type NoParams = { query?: never; header?: never; path?: never; cookie?: never };
type Json<T> = { headers: { [name: string]: unknown }; content: { 'application/json': T } };
type ErrorBody = Json<{ code?: string; message?: string; details?: { [key: string]: unknown } }>;
type Get<P, T> = {
  parameters: P;
  get: { parameters: P; requestBody?: never; responses: { 200: Json<T>; 400: ErrorBody; 401: ErrorBody; 403: ErrorBody; 404: ErrorBody } };
  put?: never; post?: never; delete?: never; options?: never; head?: never; patch?: never; trace?: never;
};

type CRDRevision = {
  version?: string;
  digest?: string;
  operator?: string;
  dropped?: boolean;
  createdAt?: string;
  versions?: string[];
  migrationNote?: { text?: string; url?: string } | null;
};
type SchemaChange = { path?: string; kind?: string; version?: string; breaking?: boolean; message?: string };

export interface pendingPaths {
  '/api/v1/whoami': Get<NoParams, { subject?: string; roles?: string[]; environments?: string[] }>;
  '/api/v1/fleet': Get<
    { query?: { environment?: string }; header?: never; path?: never; cookie?: never },
    {
      operators?: { name?: string; namespace?: string; latestVersion?: string; versions?: string[] }[];
      clusters?: {
        name?: string;
        environment?: string;
        health?: string;
        healthReason?: string;
        kubernetesVersion?: string;
        lastChecked?: string | null;
      }[];
      cells?: {
        operator?: string;
        cluster?: string;
        environment?: string;
        version?: string;
        latestVersion?: string;
        drift?: 'current' | 'behind';
        health?: 'Healthy' | 'Degraded' | 'Unhealthy' | 'Unknown';
        healthReason?: string;
        deploymentId?: string;
        helmRevision?: number;
        checkedAt?: string | null;
      }[];
    }
  >;
  '/api/v1/ui/config': Get<
    NoParams,
    { oidc?: { issuer?: string; clientId?: string; scopes?: string[] }; sessionExchange?: boolean }
  >;
  '/api/v1/session': {
    parameters: NoParams;
    get?: never;
    put?: never;
    post: {
      parameters: NoParams;
      requestBody: { content: { 'application/json': { ticket: string } } };
      responses: {
        200: Json<{ token?: string; subject?: string; roles?: string[]; expiresAt?: string }>;
        400: ErrorBody;
        401: ErrorBody;
      };
    };
    delete?: never; options?: never; head?: never; patch?: never; trace?: never;
  };
  '/api/v1/crds/{name}/revisions/{version}': Get<
    { query?: never; header?: never; path: { name: string; version: string }; cookie?: never },
    CRDRevision & { crd?: string; definition?: { [key: string]: unknown } }
  >;
  '/api/v1/crds/{name}/diff': Get<
    { query: { from: string; to: string }; header?: never; path: { name: string }; cookie?: never },
    {
      crd?: string;
      from?: CRDRevision;
      to?: CRDRevision;
      breaking?: boolean;
      changes?: SchemaChange[];
      migrationNotes?: { crd?: string; version?: string; digest?: string; note?: { text?: string; url?: string } }[];
    }
  >;
}
