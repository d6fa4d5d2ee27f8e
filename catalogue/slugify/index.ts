// slugify: turns a title or phrase into a URL/file-name friendly slug. (TypeScript.)
//
// Steps: transliterate Latin letters that do not decompose (ß→ss, æ→ae,
// ø→o, ł→l, þ→th ...), strip accents via Unicode NFD (é→e, ñ→n, ü→u),
// turn "&" into "and", drop apostrophes inside words (don't→dont), replace
// every other run of non-alphanumeric characters with the separator, trim
// separators at both ends, optionally lower-case, and finally shorten to
// max_length, preferring to cut at a separator. Characters from non-Latin
// scripts (Cyrillic, CJK, emoji ...) are dropped, so the slug may be empty.

const SPECIAL: Record<string, string> = {
  ß: 'ss', ẞ: 'SS', æ: 'ae', Æ: 'AE', ø: 'o', Ø: 'O', œ: 'oe', Œ: 'OE',
  đ: 'd', Đ: 'D', ð: 'd', Ð: 'D', þ: 'th', Þ: 'Th', ł: 'l', Ł: 'L',
  ħ: 'h', Ħ: 'H', ı: 'i', ŀ: 'l', Ŀ: 'L', ŋ: 'n', Ŋ: 'N', ſ: 's',
  ĸ: 'k', ŧ: 't', Ŧ: 'T', ĳ: 'ij', Ĳ: 'IJ',
};
const SPECIAL_RE = new RegExp(`[${Object.keys(SPECIAL).join('')}]`, 'g');
type Separator = '-' | '_' | '.';
const SEPARATORS: Separator[] = ['-', '_', '.'];

interface Params {
  text: string;
  separator?: Separator;
  lowercase?: boolean;
  max_length?: number;
}

interface Slug {
  slug: string;
  original_length: number;
  truncated: boolean;
}

function transliterate(text: string): string {
  return text
    .replace(SPECIAL_RE, (c: string) => SPECIAL[c])
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, ''); // combining diacritical marks
}

function run(params: Params): Slug {
  const text = params.text;
  const sep = params.separator === undefined ? '-' : params.separator;
  const lowercase = params.lowercase === undefined ? true : params.lowercase;
  const maxLength = params.max_length === undefined ? 80 : params.max_length;
  if (typeof text !== 'string') throw new Error('text must be a string');
  if (!SEPARATORS.includes(sep)) throw new Error('separator must be one of "-", "_", "."');
  if (!Number.isInteger(maxLength) || maxLength < 1 || maxLength > 200) {
    throw new Error('max_length must be an integer from 1 to 200');
  }

  let s = transliterate(text)
    .replace(/&/g, ' and ')
    .replace(/([A-Za-z0-9])['\u2019\u02bc]+(?=[A-Za-z0-9])/g, '$1') // don't -> dont
    .replace(/[^A-Za-z0-9]+/g, sep);
  s = trimSep(s, sep);
  if (lowercase) s = s.toLowerCase();

  let truncated = false;
  if (s.length > maxLength) {
    truncated = true;
    let cut = s.slice(0, maxLength);
    // Prefer ending on a whole word when that keeps at least half the length.
    if (s[maxLength] !== sep) {
      const lastSep = cut.lastIndexOf(sep);
      if (lastSep >= Math.ceil(maxLength / 2)) cut = cut.slice(0, lastSep);
    }
    s = trimSep(cut, sep);
  }

  return { slug: s, original_length: [...text].length, truncated };
}

function trimSep(s: string, sep: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && s[start] === sep) start++;
  while (end > start && s[end - 1] === sep) end--;
  return s.slice(start, end);
}
