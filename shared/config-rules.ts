/**
 * The crawl-rule format (`rules` in the config, docs/rules.md): matches and actions as one zod
 * schema. The seed's XML form is parsed into this shape (crawl/rules/rules-xml.ts) and compiled
 * by crawl/rules/rules.ts; neither needs the rest of the config.
 */
import { z } from 'zod';

const atomSchema = z.strictObject({
  field: z.enum(['url', 'scheme', 'host', 'path', 'query']),
  kind: z.enum(['exact', 'prefix', 'suffix', 'inside', 'length']),
  norm: z.enum(['norm', 'lower', 'none']).optional(),
  value: z.string(),
  /** seed 001 `litteral="true"`: match `value` as a plain string, not a regular expression */
  literal: z.boolean().optional(),
});

export type RuleMatch =
  | { and: RuleMatch[] }
  | { or: RuleMatch[] }
  | { not: RuleMatch }
  | { atom: z.infer<typeof atomSchema> }
  | { domain: string }
  | { path: string }
  | { ext: string }
  | { host: string }
  | { url: string }
  | { scheme: string }
  | { query: string }
  | { inQuery: string }
  | { length: { field: 'url' | 'scheme' | 'host' | 'path' | 'query'; value: string } };

export const RuleMatchSchema: z.ZodType<RuleMatch> = z.lazy(() =>
  z.union([
    z.strictObject({ and: z.array(RuleMatchSchema).min(1) }),
    z.strictObject({ or: z.array(RuleMatchSchema).min(1) }),
    z.strictObject({ not: RuleMatchSchema }),
    z.strictObject({ atom: atomSchema }),
    z.strictObject({ domain: z.string().min(1) }),
    z.strictObject({ path: z.string().min(1) }),
    z.strictObject({ ext: z.string().min(1) }),
    z.strictObject({ host: z.string().min(1) }),
    z.strictObject({ url: z.string().min(1) }),
    z.strictObject({ scheme: z.string().min(1) }),
    z.strictObject({ query: z.string() }),
    z.strictObject({ inQuery: z.string().min(1) }),
    z.strictObject({
      length: z.strictObject({
        field: z.enum(['url', 'scheme', 'host', 'path', 'query']),
        value: z.string(),
      }),
    }),
  ]),
);

export const RuleActionSchema = z.union([
  z.enum(['index', 'noIndex', 'follow', 'noFollow', 'accept', 'ignore']),
  z.strictObject({ source: z.string().min(1) }),
  z.strictObject({ addMeta: z.strictObject({ name: z.string().min(1), value: z.string() }) }),
  z.strictObject({ priority: z.number().int().min(-2).max(2) }),
  z.strictObject({ refresh: z.strictObject({ min: z.string(), max: z.string() }) }),
]);
export type RuleAction = z.infer<typeof RuleActionSchema>;

export const RuleSchema = z.strictObject({
  match: RuleMatchSchema,
  actions: z.array(RuleActionSchema).min(1),
});
export type Rule = z.infer<typeof RuleSchema>;
