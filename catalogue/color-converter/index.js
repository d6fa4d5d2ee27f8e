// color-converter: parses a CSS color and converts it to other notations.
//
// Input: #rgb, #rgba, #rrggbb, #rrggbbaa (the # is optional), rgb()/rgba()
// and hsl()/hsla() in comma or space syntax (with "/ alpha", percentages and
// deg/rad/grad/turn hues), the 148 CSS named colors, and "transparent".
// Output: hex, rgb, hsl, hsv, cmyk, the exact CSS name(s) if any, the nearest
// named color by CIE76 delta E in CIELAB (D65), WCAG 2 relative luminance, the
// better text color (black or white) and, given a second color, the WCAG
// contrast ratio with AA/AAA pass flags. A translucent color is composited
// over the second color (itself composited over white) before measuring.

const NAMED = 'aliceblue:f0f8ff,antiquewhite:faebd7,aqua:00ffff,aquamarine:7fffd4,azure:f0ffff,beige:f5f5dc,bisque:ffe4c4,' +
  'black:000000,blanchedalmond:ffebcd,blue:0000ff,blueviolet:8a2be2,brown:a52a2a,burlywood:deb887,cadetblue:5f9ea0,' +
  'chartreuse:7fff00,chocolate:d2691e,coral:ff7f50,cornflowerblue:6495ed,cornsilk:fff8dc,crimson:dc143c,cyan:00ffff,' +
  'darkblue:00008b,darkcyan:008b8b,darkgoldenrod:b8860b,darkgray:a9a9a9,darkgreen:006400,darkgrey:a9a9a9,darkkhaki:bdb76b,' +
  'darkmagenta:8b008b,darkolivegreen:556b2f,darkorange:ff8c00,darkorchid:9932cc,darkred:8b0000,darksalmon:e9967a,' +
  'darkseagreen:8fbc8f,darkslateblue:483d8b,darkslategray:2f4f4f,darkslategrey:2f4f4f,darkturquoise:00ced1,darkviolet:9400d3,' +
  'deeppink:ff1493,deepskyblue:00bfff,dimgray:696969,dimgrey:696969,dodgerblue:1e90ff,firebrick:b22222,floralwhite:fffaf0,' +
  'forestgreen:228b22,fuchsia:ff00ff,gainsboro:dcdcdc,ghostwhite:f8f8ff,gold:ffd700,goldenrod:daa520,gray:808080,' +
  'green:008000,greenyellow:adff2f,grey:808080,honeydew:f0fff0,hotpink:ff69b4,indianred:cd5c5c,indigo:4b0082,ivory:fffff0,' +
  'khaki:f0e68c,lavender:e6e6fa,lavenderblush:fff0f5,lawngreen:7cfc00,lemonchiffon:fffacd,lightblue:add8e6,' +
  'lightcoral:f08080,lightcyan:e0ffff,lightgoldenrodyellow:fafad2,lightgray:d3d3d3,lightgreen:90ee90,lightgrey:d3d3d3,' +
  'lightpink:ffb6c1,lightsalmon:ffa07a,lightseagreen:20b2aa,lightskyblue:87cefa,lightslategray:778899,' +
  'lightslategrey:778899,lightsteelblue:b0c4de,lightyellow:ffffe0,lime:00ff00,limegreen:32cd32,linen:faf0e6,' +
  'magenta:ff00ff,maroon:800000,mediumaquamarine:66cdaa,mediumblue:0000cd,mediumorchid:ba55d3,mediumpurple:9370db,' +
  'mediumseagreen:3cb371,mediumslateblue:7b68ee,mediumspringgreen:00fa9a,mediumturquoise:48d1cc,mediumvioletred:c71585,' +
  'midnightblue:191970,mintcream:f5fffa,mistyrose:ffe4e1,moccasin:ffe4b5,navajowhite:ffdead,navy:000080,oldlace:fdf5e6,' +
  'olive:808000,olivedrab:6b8e23,orange:ffa500,orangered:ff4500,orchid:da70d6,palegoldenrod:eee8aa,palegreen:98fb98,' +
  'paleturquoise:afeeee,palevioletred:db7093,papayawhip:ffefd5,peachpuff:ffdab9,peru:cd853f,pink:ffc0cb,plum:dda0dd,' +
  'powderblue:b0e0e6,purple:800080,rebeccapurple:663399,red:ff0000,rosybrown:bc8f8f,royalblue:4169e1,saddlebrown:8b4513,' +
  'salmon:fa8072,sandybrown:f4a460,seagreen:2e8b57,seashell:fff5ee,sienna:a0522d,silver:c0c0c0,skyblue:87ceeb,' +
  'slateblue:6a5acd,slategray:708090,slategrey:708090,snow:fffafa,springgreen:00ff7f,steelblue:4682b4,tan:d2b48c,' +
  'teal:008080,thistle:d8bfd8,tomato:ff6347,turquoise:40e0d0,violet:ee82ee,wheat:f5deb3,white:ffffff,whitesmoke:f5f5f5,' +
  'yellow:ffff00,yellowgreen:9acd32';

const NAMES = NAMED.split(',').map((pair) => {
  const [name, hex] = pair.split(':');
  const rgb = [0, 2, 4].map((i) => parseInt(hex.slice(i, i + 2), 16));
  return { name, hex: '#' + hex, rgb, lab: lab(rgb) };
});
const BY_NAME = new Map(NAMES.map((n) => [n.name, n]));

const round = (x, d) => {
  const r = Math.round(x * 10 ** d) / 10 ** d;
  return r === 0 ? 0 : r; // no -0
};
const clamp = (x, lo, hi) => Math.min(hi, Math.max(lo, x));

function linear(c8) {
  const c = c8 / 255;
  return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
}
function luminance(rgb) {
  const [r, g, b] = rgb.map(linear);
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
function lab(rgb) {
  const [r, g, b] = rgb.map(linear);
  const xyz = [
    (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047,
    0.2126729 * r + 0.7151522 * g + 0.072175 * b,
    (0.0193339 * r + 0.119192 * g + 0.9503041 * b) / 1.08883,
  ];
  const [fx, fy, fz] = xyz.map((t) => (t > 216 / 24389 ? Math.cbrt(t) : (24389 / 27 * t + 16) / 116));
  return [116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)];
}

function num(text, what) {
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?%?$/i.test(text)) throw new Error(`cannot read ${what} "${text}"`);
  return { value: parseFloat(text), percent: text.endsWith('%') };
}
function alphaOf(text) {
  if (text === undefined) return 1;
  const a = num(text, 'alpha');
  return clamp(a.percent ? a.value / 100 : a.value, 0, 1);
}
function hueOf(text) {
  const m = /^(.*?)(deg|grad|rad|turn)?$/i.exec(text);
  const v = num(m[1], 'hue').value;
  const unit = (m[2] || 'deg').toLowerCase();
  const deg = unit === 'turn' ? v * 360 : unit === 'rad' ? (v * 180) / Math.PI : unit === 'grad' ? v * 0.9 : v;
  return ((deg % 360) + 360) % 360;
}

function hslToRgb(h, s, l) {
  const k = (n) => (n + h / 30) % 12;
  const a = s * Math.min(l, 1 - l);
  return [0, 8, 4].map((n) => 255 * (l - a * Math.max(-1, Math.min(k(n) - 3, 9 - k(n), 1))));
}

// Returns { rgb: [r, g, b] as 0-255 floats, alpha: 0-1 }.
function parseColor(input, what) {
  if (typeof input !== 'string') throw new Error(`${what} must be a string`);
  const s = input.trim().toLowerCase();
  if (BY_NAME.has(s)) return { rgb: BY_NAME.get(s).rgb.slice(), alpha: 1 };
  if (s === 'transparent') return { rgb: [0, 0, 0], alpha: 0 };
  const hex = /^#?([0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})$/.exec(s);
  if (hex) {
    let h = hex[1];
    if (h.length <= 4) h = h.replace(/./g, '$&$&');
    const bytes = h.match(/../g).map((x) => parseInt(x, 16));
    return { rgb: bytes.slice(0, 3), alpha: bytes.length === 4 ? bytes[3] / 255 : 1 };
  }
  const fn = /^(rgba?|hsla?)\(\s*(.*?)\s*\)$/.exec(s);
  if (!fn) {
    throw new Error(`cannot parse ${what} ${JSON.stringify(input)}: use #rrggbb, #rgb, rgb(), rgba(), hsl(), hsla() or a CSS color name`);
  }
  const [body, alphaPart] = fn[2].split(/\s*\/\s*/);
  const parts = body.split(/\s*,\s*|\s+/);
  if (alphaPart !== undefined && parts.length !== 3) throw new Error(`${what}: ${fn[1]}() needs three components before "/"`);
  if (parts.length < 3 || parts.length > 4) throw new Error(`${what}: ${fn[1]}() needs 3 components and an optional alpha, got ${parts.length}`);
  const alpha = alphaOf(alphaPart !== undefined ? alphaPart : parts[3]);
  if (fn[1].startsWith('rgb')) {
    const rgb = parts.slice(0, 3).map((p, i) => {
      const n = num(p, 'rgb'[i]);
      return clamp(n.percent ? (n.value * 255) / 100 : n.value, 0, 255);
    });
    return { rgb, alpha };
  }
  const h = hueOf(parts[0]);
  const [sat, light] = [parts[1], parts[2]].map((p, i) => clamp(num(p, ['saturation', 'lightness'][i]).value, 0, 100) / 100);
  return { rgb: hslToRgb(h, sat, light), alpha };
}

function toHsl([r, g, b]) {
  [r, g, b] = [r / 255, g / 255, b / 255];
  const max = Math.max(r, g, b);
  const min = Math.min(r, g, b);
  const d = max - min;
  let h = 0;
  if (d > 0) {
    if (max === r) h = ((g - b) / d) % 6;
    else if (max === g) h = (b - r) / d + 2;
    else h = (r - g) / d + 4;
    h = (h * 60 + 360) % 360;
  }
  const l = (max + min) / 2;
  const sl = d === 0 ? 0 : d / (1 - Math.abs(2 * l - 1));
  const sv = max === 0 ? 0 : d / max;
  return { h, sl, l, sv, v: max };
}

const hex2 = (x) => Math.round(x).toString(16).padStart(2, '0');

function contrastRatio(l1, l2) {
  return (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
}
const over = (fg, a, bg) => fg.map((c, i) => c * a + bg[i] * (1 - a));

function run(params) {
  const color = parseColor(params.color, 'color');
  const rgb8 = color.rgb.map((c) => Math.round(c));
  const a = round(color.alpha, 3);
  const { h, sl, l, sv, v } = toHsl(color.rgb);
  const hue = round(h, 1) === 360 ? 0 : round(h, 1);
  const k = 1 - v;
  const cmy = color.rgb.map((c) => (k >= 1 ? 0 : (1 - c / 255 - k) / (1 - k)));
  const lum = luminance(rgb8);
  const myLab = lab(rgb8);
  let nearest = null;
  for (const n of NAMES) {
    const d = Math.hypot(myLab[0] - n.lab[0], myLab[1] - n.lab[1], myLab[2] - n.lab[2]);
    if (nearest === null || d < nearest.d) nearest = { n, d };
  }
  const hsl = { h: hue, s: round(sl * 100, 1), l: round(l * 100, 1) };
  const result = {
    input: params.color,
    hex: '#' + rgb8.map(hex2).join('') + (a < 1 ? hex2(color.alpha * 255) : ''),
    rgb: { r: rgb8[0], g: rgb8[1], b: rgb8[2], css: a < 1 ? `rgba(${rgb8.join(', ')}, ${a})` : `rgb(${rgb8.join(', ')})` },
    hsl: { ...hsl, css: a < 1 ? `hsla(${hsl.h}, ${hsl.s}%, ${hsl.l}%, ${a})` : `hsl(${hsl.h}, ${hsl.s}%, ${hsl.l}%)` },
    hsv: { h: hue, s: round(sv * 100, 1), v: round(v * 100, 1) },
    cmyk: { c: round(cmy[0] * 100, 1), m: round(cmy[1] * 100, 1), y: round(cmy[2] * 100, 1), k: round(k * 100, 1) },
    alpha: a,
    names: NAMES.filter((n) => n.rgb.every((c, i) => c === rgb8[i])).map((n) => n.name),
    nearest_name: { name: nearest.n.name, hex: nearest.n.hex, delta_e: round(nearest.d, 2) },
    luminance: round(lum, 4),
    readable_text: contrastRatio(lum, 0) >= contrastRatio(lum, 1) ? '#000000' : '#ffffff',
  };
  if (params.compare_with !== undefined) {
    const other = parseColor(params.compare_with, 'compare_with');
    const bg = other.alpha < 1 ? over(other.rgb, other.alpha, [255, 255, 255]) : other.rgb;
    const fg = color.alpha < 1 ? over(color.rgb, color.alpha, bg) : color.rgb;
    const ratio = contrastRatio(luminance(fg.map(Math.round)), luminance(bg.map(Math.round)));
    result.contrast = {
      against: '#' + bg.map(hex2).join(''),
      ratio: Math.floor(ratio * 100) / 100, // truncated, so 4.499 never shows as 4.5
      aa_normal: ratio >= 4.5,
      aa_large: ratio >= 3,
      aaa_normal: ratio >= 7,
      aaa_large: ratio >= 4.5,
      ui_components: ratio >= 3,
    };
    if (color.alpha < 1 || other.alpha < 1) result.contrast.note = 'translucent colors were composited (color over compare_with, compare_with over white) first';
  }
  return result;
}
