/** Words that carry no meaning for retrieval, English and Chinese. */
const STOP = new Set(
  (
    "a an and are as at be by can do for from has have how i in into is it its of on or our please should so that the " +
    "their then this to use was we were will with without you your me my only just also not no yes " +
    "py ts js md txt json yaml yml pass passes passed"
  ).split(" "),
);
const CJK_STOP = new Set([
  "的",
  "了",
  "和",
  "是",
  "在",
  "把",
  "将",
  "请",
  "我",
  "你",
  "一个",
  "这个",
  "进行",
]);

const CJK = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]/;

/**
 * Tokens for BM25: paths split on `/ . - _`, camelCase and snake_case split, lowercased, stop
 * words dropped; runs of CJK characters become character bigrams (a single character stays a
 * unigram), which is how CJK text is usually indexed without a dictionary.
 */
export function tokenize(text: string): string[] {
  return tokenizeGroups(text).flat();
}

/**
 * The tokens grouped by the word they came from: a Latin word is one group of one or more tokens
 * (camelCase parts), a CJK run is one group of its bigrams. Retrieval measures query coverage
 * per group, so a five-character Chinese phrase weighs like one word, not four.
 */
export function tokenizeGroups(text: string): string[][] {
  const groups: string[][] = [];
  // Letters/digits runs, or CJK runs; everything else separates.
  const chunks = text.match(/[\p{L}\p{N}]+/gu) ?? [];
  for (const chunk of chunks) {
    if (CJK.test(chunk)) {
      splitMixed(chunk, groups);
      continue;
    }
    pushWords(chunk, groups);
  }
  return groups;
}

function splitMixed(chunk: string, groups: string[][]): void {
  let latin = "";
  let cjk = "";
  const flushLatin = () => {
    if (latin !== "") pushWords(latin, groups);
    latin = "";
  };
  const flushCjk = () => {
    if (cjk === "") return;
    const chars = [...cjk];
    const out: string[] = [];
    if (chars.length === 1) {
      if (!CJK_STOP.has(cjk)) out.push(cjk);
    } else {
      for (let i = 0; i + 1 < chars.length; i++) {
        const bigram = `${chars[i]}${chars[i + 1]}`;
        if (!CJK_STOP.has(bigram)) out.push(bigram);
      }
    }
    if (out.length > 0) groups.push(out);
    cjk = "";
  };
  for (const ch of chunk) {
    if (CJK.test(ch)) {
      flushLatin();
      cjk += ch;
    } else {
      flushCjk();
      latin += ch;
    }
  }
  flushLatin();
  flushCjk();
}

function pushWords(word: string, groups: string[][]): void {
  // camelCase and digit boundaries: "parsePatchV2" → parse, patch, v2; "HTTPServer" → http, server
  const parts = word
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .split(/\s+/);
  for (const part of parts) {
    const t = part.toLowerCase();
    if (t.length < 2 && !/\d/.test(t)) continue;
    if (STOP.has(t)) continue;
    groups.push([t]);
  }
}
