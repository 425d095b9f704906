/**
 * `fetch.auth`: credentials per URL prefix (basic, headers, cookies, form login), and `fetch.proxy`
 * with its login. A secret is a plain string (works, with a warning: it is stored with the config),
 * `{ "env": "NAME" }` or, on AWS, `{ "secretArn": "…" }` read from Secrets Manager at cold start.
 */
import { z } from 'zod';

const prefixUrl = z.string().refine(
  (s) => {
    const u = URL.parse(s);
    return u !== null && (u.protocol === 'http:' || u.protocol === 'https:');
  },
  { message: 'must be an absolute http(s) URL prefix' },
);

/** A secret value: inline (discouraged), an environment variable, or a Secrets Manager secret. */
export const SecretSchema = z.union([
  z.string(),
  z.strictObject({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name') }),
  z.strictObject({
    secretArn: z.string().startsWith('arn:', 'a Secrets Manager ARN (arn:aws:secretsmanager:…)'),
    /** the key to read when the secret's value is a JSON object */
    key: z.string().min(1).optional(),
  }),
]);
export type SecretRef = z.infer<typeof SecretSchema>;

const FormSchema = z.strictObject({
  /**
   * the form's action URL: the fields are POSTed there as application/x-www-form-urlencoded; with
   * `readForm`, the login page that holds the form
   */
  loginUrl: prefixUrl,
  /** form fields, e.g. { "user": "u", "pass": { "env": "INTRANET_PASS" } } */
  fields: z.record(z.string(), SecretSchema),
  /**
   * @default false — read the login page first (GET `loginUrl`, same-origin redirects followed)
   * and submit its form as a browser does: to the form's action, with its hidden fields (a CSRF
   * token, a session code), its prefilled values and the cookies the page set, `fields` in their
   * place. For login forms that carry a token (Django, Rails, Spring, Laravel, Keycloak).
   */
  readForm: z.boolean().default(false),
  /** @default { cookie: null } — the login worked when its response sets this cookie (null: any cookie) */
  successWhen: z
    .strictObject({
      cookie: z.string().min(1).nullable().default(null),
      status: z.array(z.number().int().min(100).max(599)).optional(),
    })
    .prefault({}),
  /**
   * @default { status: [401, 403], redirectTo: loginUrl } — a page answered like this means the
   * session ended: log in again and fetch it once more
   */
  loggedOutWhen: z
    .strictObject({
      status: z.array(z.number().int().min(100).max(599)).default([401, 403]),
      /** a redirect whose target starts with this (default: the login URL's path) */
      redirectTo: z.string().min(1).nullable().default(null),
      /** a 200 page whose body contains this text, e.g. a login form's field name */
      bodyContains: z.string().min(1).nullable().default(null),
    })
    .prefault({}),
});

export const AuthEntrySchema = z
  .strictObject({
    /** credentials are sent only to URLs of this origin whose path starts with the prefix's path */
    urlPrefix: prefixUrl,
    basic: z.strictObject({ username: SecretSchema, password: SecretSchema }).optional(),
    /** sent as `Authorization: Bearer <token>` */
    bearer: SecretSchema.optional(),
    /** request headers, e.g. { "Authorization": { "env": "TOKEN" } } (bearer tokens, API keys) */
    headers: z
      .record(z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'a header name'), SecretSchema)
      .optional(),
    /** cookies sent with every request under the prefix */
    cookies: z.record(z.string().min(1), SecretSchema).optional(),
    form: FormSchema.optional(),
  })

  .refine((e) => e.basic || e.bearer || e.headers || e.cookies || e.form, {
    message: 'give at least one of basic, bearer, headers, cookies, form',
  });
export type AuthEntry = z.infer<typeof AuthEntrySchema>;

/**
 * `fetch.proxy`: the forward proxy every request goes through (absolute-form for http, CONNECT for
 * https), with Basic credentials when it wants a login. `Proxy-Authorization` goes to the proxy
 * only: on the CONNECT request, never inside the tunnel, and on plain-http requests to the proxy.
 */
export const ProxySchema = z
  .strictObject({
    host: z.string().min(1),
    port: z.number().int().min(1).max(65535),
    /** the proxy login's user name, sent with `password` as `Proxy-Authorization: Basic` */
    username: z
      .string()
      .min(1)
      // RFC 7617 §2: the user-id cannot hold a colon (it ends the user-id) nor control characters.
      .regex(/^[^:\p{Cc}]+$/u, 'no colon or control characters (RFC 7617 Basic user-id)')
      .optional(),
    /** a secret, as in `fetch.auth`: `{ "env": "NAME" }`, `{ "secretArn": "…", "key"?: "…" }` or a plain string (warned about) */
    password: SecretSchema.optional(),
  })
  .superRefine((p, ctx) => {
    // Basic sends both: one without the other is a config mistake, not a login.
    if (p.password !== undefined && p.username === undefined)
      ctx.addIssue({ code: 'custom', path: ['username'], message: 'a password needs a username' });
    if (p.username !== undefined && p.password === undefined)
      ctx.addIssue({ code: 'custom', path: ['password'], message: 'a username needs a password' });
  });
export type ProxyConfig = z.infer<typeof ProxySchema>;

/** @default [] */
export const AuthSchema = z.array(AuthEntrySchema).max(100).default([]);
