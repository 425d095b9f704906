/**
 * htmlparser2's Parser with at most MAX_OPEN elements open at once. The parser keeps its open
 * elements in an array whose top is index 0 (`unshift` on every open tag), so each open tag costs
 * the depth of the document: 40,000 unclosed `<p><b><i><a>` took 2 s, 150,000 over a minute (past
 * the extract function's timeout, every delivery, and the other pages of its batch with it).
 * An element opened at the bound closes the innermost one first, as Blink attaches elements past
 * its depth limit (512) to the ancestor at the limit: the text and links are all still read.
 */
import { type Handler, Parser, type ParserOptions } from 'htmlparser2';

/** Blink's kMaximumHTMLParserDOMTreeDepth: deeper documents are flattened there too. */
export const MAX_OPEN = 512;

/** The parser's internals this relies on (htmlparser2 10: `stack`, top first; `emitOpenTag`). */
interface ParserInternals {
  stack: string[];
  emitOpenTag(name: string): void;
}

export function boundedParser(cbs: Partial<Handler>, options: ParserOptions): Parser {
  const parser = new Parser(cbs, options);
  const inner = parser as unknown as ParserInternals;
  const open = inner.emitOpenTag.bind(parser);
  inner.emitOpenTag = (name: string) => {
    if (inner.stack.length >= MAX_OPEN) {
      const innermost = inner.stack.shift() as string;
      cbs.onclosetag?.(innermost, true);
    }
    open(name);
  };
  return parser;
}
