import { formatWindow } from '../../config/rules';
import type { FieldSpec, RuleSpec, MaskSpec, CompileContext, Names, LuaTemplates } from '../types';
import { indent, str } from './lua';

/*
 * Two shapes. Inline: each mask's code has its rules' evaluations and its fields' commits written out,
 * with local functions, as fast as Lua allows (a function call costs about as much as a short
 * evaluation). Shared: each rule's evaluation, each field's commit and receipt is one function, and
 * masks call them; every generated function is a field of the table F (a Lua function has room for 200
 * locals, and 32 rules' functions would not fit). A rule set takes the shared shape when its masks would
 * repeat more than INLINE_MAX rule evaluations: the script then grows with the rules, not rules x scopes.
 */
const INLINE_MAX = 12;

/** How the generated code names things, per shape. */
export interface Shape {
  shared: boolean;
  /** A generated function's definition and its calls (local function, or a field of F). */
  define(name: string, params: readonly string[], body: string): string;
  call(name: string, args: readonly string[]): string;
}

/** `inline`: the inline shape whatever the rules (the settle script, which has no evaluations). */
export function shapeOf(masks: readonly MaskSpec[], inline = false): Shape {
  const shared = !inline && masks.reduce((n, m) => n + m.rules.length, 0) > INLINE_MAX;
  return {
    shared,
    define: (name, params, body) =>
      `${shared ? `function F.${name}` : `local function ${name}`}(${params.join(', ')})\n${indent(body.trim(), 2)}\nend`,
    call: (name, args) => `${shared ? 'F.' : ''}${name}(${args.join(', ')})`,
  };
}

/** A field's values as a mask names them (f1_c, ...). */
const inMask = (t: LuaTemplates, f: FieldSpec): string[] => t.vars.map((v) => `${f.id}_${v}`);
export const maskNames =
  (f: FieldSpec): Names =>
  (v) =>
    `${f.id}_${v}`;
const bare: Names = (v) => v;

/** The names of a mask's values: identifier-wide, then each field's. */
export function maskVars(t: LuaTemplates, m: MaskSpec): string[] {
  return [...t.idVars, ...m.fields.flatMap((f) => inMask(t, f))];
}

/** Rule r's evaluation at `cost`, into avail, reset, retry: written out, or a call of its function. */
export function evaluation(t: LuaTemplates, ctx: CompileContext, shape: Shape, r: RuleSpec, cost: string): string {
  if (shape.shared) return `avail, reset, retry = ${shape.call(`${r.id}_eval`, [...inMask(t, r.field), cost])}`;
  return `do -- rule ${r.id}\n${indent(t.evaluate(r, ctx, maskNames(r.field), cost).trim(), 2)}\nend`;
}

export function commitOf(t: LuaTemplates, ctx: CompileContext, shape: Shape, f: FieldSpec): string {
  if (shape.shared) return `${inMask(t, f).join(', ')} = ${shape.call(`${f.id}_commit`, inMask(t, f))}`;
  return `do -- field ${f.id}\n${indent(t.commit(f, ctx, maskNames(f)).trim(), 2)}\nend`;
}

export function receiptOf(t: LuaTemplates, ctx: CompileContext, shape: Shape, f: FieldSpec): string {
  return shape.shared ? shape.call(`${f.id}_receipt`, inMask(t, f)) : t.receipt(f, ctx, maskNames(f));
}

/** The shared shape's functions: per rule its evaluation, per field its commit and receipt. */
export function sharedFunctions(t: LuaTemplates, ctx: CompileContext, shape: Shape, receipts: boolean): string[] {
  const vars = [...t.vars];
  return [
    ...ctx.rules.map(
      (r) =>
        `-- rule ${r.id}: ${r.limit} per ${formatWindow(r.window)} (field ${r.field.id})\n${shape.define(`${r.id}_eval`, [...vars, 'cost'], `local avail, reset, retry\n${t.evaluate(r, ctx, bare, 'cost').trim()}\nreturn avail, reset, retry`)}`,
    ),
    ...ctx.fields.map((f) =>
      [
        `-- field ${f.id} = ${str(f.name)}`,
        shape.define(`${f.id}_commit`, vars, `${t.commit(f, ctx, bare).trim()}\nreturn ${vars.join(', ')}`),
        ...(receipts ? [shape.define(`${f.id}_receipt`, vars, `return ${t.receipt(f, ctx, bare)}`)] : []),
      ].join('\n'),
    ),
  ];
}
