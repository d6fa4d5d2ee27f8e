// mime-lookup: maps file extensions and file names to MIME types and back,
// from an embedded table of about 200 common types (values follow IANA and the
// widely used mime-db data set).
//
// By `filename` (".png", "png", "photo.JPG", "dir/backup.tar.gz"): the longest
// known extension wins, so "tar.gz" beats "gz". By `mime_type`
// ("text/html; charset=utf-8"): parameters are ignored, case is folded and a few
// legacy aliases (application/x-javascript, image/jpg ...) resolve to the
// canonical type. Each answer has all extensions of the type, a coarse kind, a
// default charset and whether the type is worth compressing (null if unknown).

// Each line: "mime ext1 ext2 ...;flags". The first extension is the preferred one.
// Flags: c/n = compressible yes/no, u = charset UTF-8,
// kind overrides: A archive, D document, T text, F font, P application.
const TABLE = `
text/html html htm shtml;cu
text/css css;cu
text/javascript js mjs cjs;cuT
application/json json map;cuT
application/ld+json jsonld;cuT
application/manifest+json webmanifest;cuT
application/geo+json geojson;cuT
application/x-ndjson ndjson jsonl;cuT
application/xml xml xsl xsd;cuT
text/xml;cu
application/xhtml+xml xhtml xht;cuT
application/rss+xml rss;cuT
application/atom+xml atom;cuT
text/plain txt text log conf ini def list in;cu
text/csv csv;cu
text/tab-separated-values tsv;cu
text/markdown md markdown mkd;cu
text/x-rst rst;cu
text/calendar ics ifb;cu
text/vcard vcf vcard;cu
text/vtt vtt;cu
text/x-python py pyw;cu
text/x-c c h;cu
text/x-c++src cpp cc cxx hpp hh;cu
text/x-java-source java;cu
text/x-go go;cu
text/rust rs;cu
text/x-ruby rb;cu
text/x-php php;cu
text/x-sh sh bash;cu
text/x-typescript ts mts cts;cu
text/jsx jsx;cu
text/tsx tsx;cu
text/x-sql sql;cu
text/x-kotlin kt kts;cu
text/x-swift swift;cu
text/x-scala scala;cu
text/x-lua lua;cu
text/x-perl pl pm;cu
text/x-r r;cu
text/x-asm s asm;cu
text/x-diff diff patch;cu
text/x-makefile mk;cu
text/x-dockerfile dockerfile;cu
text/x-handlebars-template hbs;cu
text/x-scss scss;cu
text/x-sass sass;cu
text/less less;cu
text/x-vue vue;cu
text/x-svelte svelte;cu
text/x-lisp lisp el;cu
text/x-haskell hs;cu
text/x-erlang erl;cu
text/x-elixir ex exs;cu
text/x-clojure clj cljs edn;cu
text/x-dart dart;cu
text/x-nim nim;cu
text/x-zig zig;cu
text/x-tex tex latex;cu
text/x-bibtex bib;cu
text/x-org org;cu
text/x-asciidoc adoc asciidoc;cu
text/x-properties properties;cu
application/toml toml;cuT
application/yaml yaml yml;cuT
application/graphql graphql gql;cuT
application/sql;cuT
application/x-httpd-php;cuT
application/x-sh;cT
application/x-csh csh;cT
application/x-powershell ps1 psm1;cuT
application/x-bat bat cmd;cT
application/x-latex;cT
application/x-subrip srt;cuT
application/x-ipynb+json ipynb;cuT
application/wasm wasm;c
application/octet-stream bin exe dll so dylib o obj class dmg iso img msi deb rpm apk dat;n
application/pdf pdf;nD
application/rtf rtf;cD
application/msword doc dot;cD
application/vnd.openxmlformats-officedocument.wordprocessingml.document docx;nD
application/vnd.openxmlformats-officedocument.wordprocessingml.template dotx;nD
application/vnd.ms-excel xls xlt xla;cD
application/vnd.openxmlformats-officedocument.spreadsheetml.sheet xlsx;nD
application/vnd.openxmlformats-officedocument.spreadsheetml.template xltx;nD
application/vnd.ms-excel.sheet.macroenabled.12 xlsm;nD
application/vnd.ms-powerpoint ppt pps pot;cD
application/vnd.openxmlformats-officedocument.presentationml.presentation pptx;nD
application/vnd.openxmlformats-officedocument.presentationml.slideshow ppsx;nD
application/vnd.oasis.opendocument.text odt;nD
application/vnd.oasis.opendocument.spreadsheet ods;nD
application/vnd.oasis.opendocument.presentation odp;nD
application/vnd.oasis.opendocument.graphics odg;nD
application/vnd.apple.pages pages;nD
application/vnd.apple.numbers numbers;nD
application/vnd.apple.keynote key;nD
application/vnd.visio vsd;D
application/vnd.ms-outlook msg;D
message/rfc822 eml mime;cD
application/epub+zip epub;nD
application/x-mobipocket-ebook mobi;D
application/vnd.amazon.ebook azw;D
application/x-fictionbook+xml fb2;cD
application/postscript ps eps ai;cD
application/x-tex-tfm tfm;P
application/vnd.google-earth.kml+xml kml;cT
application/vnd.google-earth.kmz kmz;nA
application/gpx+xml gpx;cT
application/zip zip;nA
application/gzip gz tar.gz tgz;nA
application/x-tar tar;cA
application/x-bzip2 bz2 tar.bz2 tbz2 tbz;nA
application/x-xz xz tar.xz txz;nA
application/zstd zst tar.zst tzst;nA
application/x-lzip lz;nA
application/x-lzma lzma;nA
application/x-compress z tar.z taz;nA
application/x-7z-compressed 7z;nA
application/vnd.rar rar;nA
application/x-rar-compressed;nA
application/x-zip-compressed;nA
application/x-gzip;nA
application/java-archive jar war ear;nA
application/x-cpio cpio;A
application/x-archive a ar;A
application/x-iso9660-image;nA
application/vnd.android.package-archive;nA
application/x-apple-diskimage;nA
application/x-debian-package;nA
application/x-redhat-package-manager;nA
application/vnd.ms-cab-compressed cab;nA
application/x-msdownload;n
application/x-executable elf;n
application/x-shockwave-flash swf;n
application/x-bittorrent torrent;n
application/x-x509-ca-cert crt der cer;n
application/x-pem-file pem;cT
application/pkcs12 p12 pfx;n
application/pkcs8 p8 key;n
application/pkcs7-mime p7m p7c;n
application/pkcs7-signature p7s;n
application/pgp-signature sig asc;c
application/pgp-encrypted pgp gpg;n
application/x-sqlite3 sqlite sqlite3 db;n
application/vnd.apache.parquet parquet;n
application/vnd.apache.avro avro;n
application/x-hdf5 h5 hdf5;n
application/x-protobuf pb proto;n
application/msgpack msgpack;n
application/cbor cbor;n
application/x-font-ttf;cF
application/vnd.ms-fontobject eot;cF
application/x-www-form-urlencoded;c
multipart/form-data;n
multipart/byteranges;n
application/javascript;cuT
application/x-javascript;cuT
image/png png;n
image/jpeg jpg jpeg jpe jfif pjpeg pjp;n
image/gif gif;n
image/webp webp;n
image/avif avif;n
image/heic heic;n
image/heif heif;n
image/jxl jxl;n
image/svg+xml svg svgz;c
image/bmp bmp dib;c
image/tiff tif tiff;n
image/x-icon ico cur;c
image/vnd.microsoft.icon;c
image/vnd.adobe.photoshop psd;c
image/x-xcf xcf;
image/x-portable-pixmap ppm pgm pbm pnm;
image/x-tga tga;
image/x-canon-cr2 cr2;n
image/x-nikon-nef nef;n
image/x-adobe-dng dng;n
image/apng apng;n
image/jp2 jp2 jpx;n
image/x-raw raw;n
audio/mpeg mp3 mpga;n
audio/wav wav;n
audio/ogg ogg oga opus spx;n
audio/flac flac;n
audio/aac aac;n
audio/mp4 m4a mp4a;n
audio/webm weba;n
audio/midi mid midi kar;
audio/x-aiff aif aiff aifc;
audio/amr amr;n
audio/x-ms-wma wma;n
audio/x-matroska mka;n
audio/basic au snd;c
video/mp4 mp4 m4v mp4v mpg4;n
video/webm webm;n
video/ogg ogv;n
video/quicktime mov qt;n
video/x-msvideo avi;n
video/x-matroska mkv mk3d;n
video/mpeg mpeg mpg mpe m1v m2v;n
video/mp2t ts m2ts mts;n
video/3gpp 3gp;n
video/3gpp2 3g2;n
video/x-flv flv;n
video/x-ms-wmv wmv;n
video/x-m4v;n
font/woff woff;nF
font/woff2 woff2;nF
font/ttf ttf;cF
font/otf otf;cF
font/collection ttc;cF
model/gltf+json gltf;cT
model/gltf-binary glb;c
model/stl stl;
model/obj;
model/vnd.usdz+zip usdz;n
application/vnd.ms-pki.stl;
application/x-blender blend;
application/vnd.sketchup.skp skp;
text/x-nfo nfo;u
`;

// Legacy or informal names and the canonical type they mean.
const ALIASES = {
  'application/x-javascript': 'text/javascript',
  'application/javascript': 'text/javascript',
  'application/ecmascript': 'text/javascript',
  'text/ecmascript': 'text/javascript',
  'text/x-javascript': 'text/javascript',
  'image/jpg': 'image/jpeg',
  'image/pjpeg': 'image/jpeg',
  'audio/mp3': 'audio/mpeg',
  'audio/x-wav': 'audio/wav',
  'audio/wave': 'audio/wav',
  'audio/x-flac': 'audio/flac',
  'application/x-gzip': 'application/gzip',
  'application/x-zip-compressed': 'application/zip',
  'application/x-rar-compressed': 'application/vnd.rar',
  'application/x-font-ttf': 'font/ttf',
  'application/font-woff': 'font/woff',
  'application/x-yaml': 'application/yaml',
  'text/yaml': 'application/yaml',
  'text/x-yaml': 'application/yaml',
  'text/json': 'application/json',
  'image/vnd.microsoft.icon': 'image/x-icon',
  'text/x-markdown': 'text/markdown',
  'application/x-pdf': 'application/pdf',
  'video/x-m4v': 'video/mp4',
  'application/x-msdownload': 'application/octet-stream',
};

const KINDS = { A: 'archive', D: 'document', T: 'text', F: 'font', P: 'application' };
const TOP_KINDS = { image: 'image', video: 'video', audio: 'audio', text: 'text', font: 'font' };

const BY_TYPE = new Map(); // mime -> entry
const BY_EXT = new Map(); // ext -> [mime, ...] (first is preferred)
for (const line of TABLE.trim().split('\n')) {
  const [head, flags] = line.split(';');
  const [type, ...exts] = head.trim().split(/\s+/);
  const kindFlag = /[ADTFP]/.exec(flags);
  const entry = {
    mime_type: type,
    extensions: exts,
    kind: kindFlag ? KINDS[kindFlag[0]] : TOP_KINDS[type.split('/')[0]] || 'application',
    charset: flags.includes('u') ? 'UTF-8' : null,
    compressible: flags.includes('c') ? true : flags.includes('n') ? false : null,
  };
  BY_TYPE.set(type, entry);
  for (const e of exts) {
    if (!BY_EXT.has(e)) BY_EXT.set(e, []);
    BY_EXT.get(e).push(type);
  }
}

function describe(entry) {
  return {
    mime_type: entry.mime_type,
    extensions: entry.extensions.slice(),
    kind: entry.kind,
    charset: entry.charset,
    compressible: entry.compressible,
  };
}

function byFilename(input) {
  const raw = input.trim();
  const base = raw.split(/[\\/]/).pop().toLowerCase();
  if (base === '') throw new Error('filename is empty (or ends with a path separator)');
  // Candidates: every dotted suffix, longest first, so "tar.gz" beats "gz"; a bare
  // word ("png") is tried as an extension itself.
  const stripped = base.replace(/^\.+/, '');
  const parts = stripped.split('.');
  const candidates = parts.map((_, i) => parts.slice(i).join('.'));
  // Whole-name matches such as "Dockerfile" or "Makefile".
  const special = { dockerfile: 'dockerfile', makefile: 'mk', gnumakefile: 'mk' };
  if (special[base]) candidates.unshift(special[base]);
  for (const ext of candidates) {
    const types = BY_EXT.get(ext);
    if (!types) continue;
    const entry = BY_TYPE.get(types[0]);
    const result = { query_type: 'extension', found: true, extension: ext, ...describe(entry), alternatives: types.slice(1) };
    if (ext.startsWith('tar.')) result.message = `.${ext} is a tar archive (application/x-tar) compressed as ${entry.mime_type}`;
    return result;
  }
  const last = parts.length > 1 || base.startsWith('.') ? parts[parts.length - 1] || null : null;
  return {
    query_type: 'extension',
    found: false,
    extension: last,
    mime_type: 'application/octet-stream',
    extensions: [],
    kind: 'application',
    charset: null,
    compressible: null,
    alternatives: [],
    message: `${last ? `unknown extension .${last}` : 'no known extension'}; application/octet-stream is the generic fallback for binary data`,
  };
}

function byMime(input) {
  const raw = input.split(';')[0].trim().toLowerCase();
  if (!/^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/.test(raw)) {
    throw new Error(`${JSON.stringify(input)} is not a MIME type (expected type/subtype, e.g. image/png)`);
  }
  const canonical = BY_TYPE.has(raw) && BY_TYPE.get(raw).extensions.length ? raw : ALIASES[raw] || raw;
  const entry = BY_TYPE.get(canonical);
  if (!entry) {
    const top = raw.split('/')[0];
    return {
      query_type: 'mime',
      found: false,
      extension: null,
      mime_type: raw,
      extensions: [],
      kind: TOP_KINDS[top] || 'application',
      charset: top === 'text' ? 'UTF-8' : null,
      compressible: top === 'text' || /\+(json|xml)$/.test(raw) ? true : null,
      alternatives: [],
      message: `${raw} is not in the embedded table; kind, charset and compressible are guessed from its form`,
    };
  }
  const result = { query_type: 'mime', found: true, extension: entry.extensions[0] || null, ...describe(entry), alternatives: [] };
  if (canonical !== raw) result.message = `${raw} is a legacy or informal alias of ${canonical}`;
  return result;
}

function run(params) {
  const hasFile = params.filename !== undefined;
  const hasMime = params.mime_type !== undefined;
  if (hasFile === hasMime) throw new Error('give exactly one of filename (or extension) and mime_type');
  const value = hasFile ? params.filename : params.mime_type;
  if (typeof value !== 'string' || value.trim() === '') throw new Error('the lookup value must be a non-empty string');
  return hasFile ? byFilename(value) : byMime(value);
}
