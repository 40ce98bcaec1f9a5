/*
 * The script compiler: the Lua a limiter runs, generated for its own rules from its algorithm's templates
 * (one Lua source per algorithm: the LuaTemplates in its file). docs/design.md, section 4 ("Script
 * protocol") gives KEYS, ARGV and the reply; section 5 ("Generated scripts") gives the plan:
 *
 *   - Every window, limit and parameter is a constant (Redis's Lua is an interpreter: tables of rules read
 *     from ARGV, and a lookup per pair, cost more than the commands the script calls).
 *   - Per mask (which rules apply to an identifier of a kind) a check and a commit function; a rule's
 *     evaluation and a field's commit are written out in them, or, when many masks would repeat them,
 *     are functions the masks call: a script grows with the rules, not with rules x scopes ("Two shapes").
 *   - One frame template, balanced, for both scripts: the single-Redis one and the split one a Cluster runs
 *     in each slot of a check whose identifiers span slots (docs/design.md, section 6).
 *   - The script opens with a comment naming each field, rule and mask, so a Redis error at
 *     `user_script:N` can be read against the script (`createProgram(...).lua`).
 *
 * One file per concern: lua.ts (literals, indentation), plan.ts (fields, rules, masks and the opening
 * comment), shape.ts (inline or shared: how a rule's evaluation and a field's commit are written),
 * mask.ts (a mask's check and commit, and the two phases over the identifiers), frames.ts (the prologue,
 * the blocks, the single-Redis and split frames with the lockout step), program.ts (the sections in order,
 * and the Program a limiter holds).
 */
export { lit, str, indent } from './lua';
export { ruleMask, ruleMasks, type ScriptKind } from './plan';
export { compileScript, createProgram, type Program } from './program';
