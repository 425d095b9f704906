/** The fields of `trawl explain`, in docs/commands.md's order: what the CLI and explainUrl must print. */
export const EXPLAIN_FIELDS = [
  'normalized',
  'domain',
  'accepted',
  'reason',
  'index',
  'follow',
  'queue',
  'priorityShift',
  'source',
  'addMeta',
  'depth',
  'traps',
];
