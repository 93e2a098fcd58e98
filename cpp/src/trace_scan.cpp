// The strict trace scanner (see roofline/trace_scan.hpp): JSON validated byte by byte, the
// Collector's rules of python/roofline/trace/_collect.py applied to each whole event.
#include "roofline/trace_scan.hpp"

#include <charconv>
#include <cstring>
#include <functional>
#include <limits>
#include <string_view>
#include <system_error>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace roofline::trace {

std::size_t TextHash::operator()(const std::string& s) const noexcept {
  return std::hash<std::string_view>{}(std::string_view(s));
}

namespace detail {

enum class R { ok, end, bail };  // parsed / the buffer ended first / give up

enum class VK : std::uint8_t {
  absent, null, tru, fals, integer, bigint, floating, badnum, string, object, array
};

// One value of an event: its kind, raw text and, where read, its number or decoded string.
struct Val {
  VK kind = VK::absent;
  const char* b = nullptr;
  const char* e = nullptr;
  std::int64_t i = 0;
  double d = 0.0;
  std::string s;  // a string's decoded UTF-8 (only for the fields that need it)
  void reset() { kind = VK::absent; }
  bool set() const { return kind != VK::absent; }
};

enum ArgKey : int {
  a_corr = 0, a_ext, a_device, a_bytes, a_stream, a_dims, a_types, a_concrete, a_seq, a_coll,
  a_group, a_dtype, a_in, a_out, a_strides, a_grid, a_block, n_args
};
constexpr std::string_view arg_names[n_args] = {
  "correlation", "External id", "device", "bytes", "stream", "Input Dims", "Input type",
  "Concrete Inputs", "Sequence number", "Collective name", "Group size", "dtype",
  "In msg nelems", "Out msg nelems", "Input Strides", "grid", "block"};

enum EvKey : int { e_ph = 0, e_cat, e_name, e_pid, e_tid, e_ts, e_dur, e_id, e_args, n_ev };
constexpr std::string_view ev_names[n_ev] = {"ph", "cat", "name", "pid", "tid", "ts", "dur",
                                             "id", "args"};

// One event's fields (the kept ones), reused from event to event.
struct Ev {
  Val f[n_ev];
  bool args_null = false;
  Val a[n_args];
  void reset() {
    for (auto& v : f) v.reset();
    for (auto& v : a) v.reset();
    args_null = false;
  }
};

}  // namespace detail

namespace {

using namespace detail;

constexpr int max_depth = 64;  // deeper nesting: give up (no recursion past it)
constexpr std::int64_t none_v = std::numeric_limits<std::int64_t>::min();  // Values NONE
constexpr std::int64_t absent_v = none_v + 1;                             // Values ABSENT
constexpr std::int64_t odd_v = none_v + 2;                                // Values ODD
constexpr double max_us = 9007199254740992.0;  // 2**53 µs, _collect._MAX_US

struct Cursor {
  const char* p;
  const char* end;
  std::string* why;
  R bail(const char* msg) {
    *why = msg;
    return R::bail;
  }
};

inline bool blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

inline void skip_ws(Cursor& c) {
  while (c.p < c.end && blank(*c.p)) ++c.p;
}

inline int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void put_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Four hex digits at c.p (advanced past them) as a code unit.
R hex4(Cursor& c, std::uint32_t& u) {
  if (c.end - c.p < 4) return R::end;
  u = 0;
  for (int k = 0; k < 4; ++k) {
    const int h = hexval(c.p[k]);
    if (h < 0) return c.bail("a bad \\u escape");
    u = (u << 4) | static_cast<std::uint32_t>(h);
  }
  c.p += 4;
  return R::ok;
}

// The length of the UTF-8 sequence at p (strict: no overlongs, surrogates or > U+10FFFF),
// 0 when invalid, -1 when the buffer ends inside it.
int utf8_len(const unsigned char* p, const unsigned char* end) {
  const unsigned c = p[0];
  int n;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (int k = 1; k < n; ++k) {
    if (p + k >= end) return -1;
    const unsigned x = p[k];
    if (k == 1 ? (x < lo || x > hi) : (x < 0x80 || x > 0xBF)) return 0;
  }
  return n;
}

// The first byte at or after p that is a quote, a backslash, a control byte or not ASCII
// (end if none): sixteen bytes at a time where SSE2 is there.
inline const char* plain_run(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  while (end - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // (signed compare: bytes >= 0x80 are negative, so "< 0x20" catches them too)
    const __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote),
                                                  _mm_cmpeq_epi8(v, slash)),
                                     _mm_cmplt_epi8(v, space));
    const int mask = _mm_movemask_epi8(hit);
    if (mask != 0) return p + __builtin_ctz(static_cast<unsigned>(mask));
    p += 16;
  }
#endif
  while (p < end) {
    const auto ch = static_cast<unsigned char>(*p);
    if (ch == '"' || ch == '\\' || ch < 0x20 || ch >= 0x80) return p;
    ++p;
  }
  return p;
}

// A string at c.p (its opening quote), validated; decoded into ``out`` when given.
R scan_string(Cursor& c, std::string* out, bool& escaped) {
  ++c.p;  // the quote
  escaped = false;
  if (out) out->clear();
  const char* run = c.p;  // start of the bytes not yet copied
  while (true) {
    c.p = plain_run(c.p, c.end);
    if (c.p >= c.end) return R::end;
    const auto ch = static_cast<unsigned char>(*c.p);
    if (ch == '"') {
      if (out) out->append(run, static_cast<std::size_t>(c.p - run));
      ++c.p;
      return R::ok;
    }
    if (ch < 0x20) return c.bail("a control character in a string");
    if (ch >= 0x80) {
      const int n = utf8_len(reinterpret_cast<const unsigned char*>(c.p),
                             reinterpret_cast<const unsigned char*>(c.end));
      if (n < 0) return R::end;
      if (n == 0) return c.bail("invalid UTF-8");
      c.p += n;
      continue;
    }
    // an escape
    escaped = true;
    if (out) out->append(run, static_cast<std::size_t>(c.p - run));
    if (c.end - c.p < 2) return R::end;
    const char e = c.p[1];
    c.p += 2;
    char lit = 0;
    switch (e) {
      case '"': lit = '"'; break;
      case '\\': lit = '\\'; break;
      case '/': lit = '/'; break;
      case 'b': lit = '\b'; break;
      case 'f': lit = '\f'; break;
      case 'n': lit = '\n'; break;
      case 'r': lit = '\r'; break;
      case 't': lit = '\t'; break;
      case 'u': {
        std::uint32_t u = 0;
        if (const R r = hex4(c, u); r != R::ok) return r;
        if (u >= 0xDC00 && u <= 0xDFFF) return c.bail("a lone low surrogate");
        if (u >= 0xD800 && u <= 0xDBFF) {
          if (c.end - c.p < 2) return R::end;
          if (c.p[0] != '\\' || c.p[1] != 'u') return c.bail("a lone high surrogate");
          c.p += 2;
          std::uint32_t lo = 0;
          if (const R r = hex4(c, lo); r != R::ok) return r;
          if (lo < 0xDC00 || lo > 0xDFFF) return c.bail("a lone high surrogate");
          u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
        }
        if (u == 0) return c.bail("a NUL escape");  // (kept out of names, to be safe)
        if (out) put_utf8(*out, u);
        run = c.p;
        continue;
      }
      default:
        return c.bail("a bad escape");
    }
    if (out) out->push_back(lit);
    run = c.p;
  }
}

// A number at c.p: its kind (integer within int64, bigint, floating, badnum) and value.
R scan_number(Cursor& c, Val& v) {
  const char* b = c.p;
  const char* q = b;
  auto more = [&]() { return q < c.end; };
  if (*q == '-') ++q;
  if (!more()) return R::end;
  if (*q == '0') {
    ++q;
  } else if (*q >= '1' && *q <= '9') {
    while (more() && *q >= '0' && *q <= '9') ++q;
  } else {
    return c.bail("a bad number");
  }
  if (!more()) return R::end;
  bool integer = true;
  if (*q == '.') {
    integer = false;
    ++q;
    if (!more()) return R::end;
    if (!(*q >= '0' && *q <= '9')) return c.bail("a bad number");
    while (more() && *q >= '0' && *q <= '9') ++q;
    if (!more()) return R::end;
  }
  if (*q == 'e' || *q == 'E') {
    integer = false;
    ++q;
    if (!more()) return R::end;
    if (*q == '+' || *q == '-') ++q;
    if (!more()) return R::end;
    if (!(*q >= '0' && *q <= '9')) return c.bail("a bad number");
    while (more() && *q >= '0' && *q <= '9') ++q;
    if (!more()) return R::end;
  }
  v.b = b;
  v.e = q;
  c.p = q;
  if (integer) {
    std::int64_t x = 0;
    const auto res = std::from_chars(b, q, x);
    if (res.ec == std::errc() && res.ptr == q) {
      v.kind = VK::integer;
      v.i = x;
    } else {
      v.kind = VK::bigint;
    }
  } else {
    double x = 0.0;
    const auto res = std::from_chars(b, q, x, std::chars_format::general);
    if (res.ec == std::errc() && res.ptr == q) {
      v.kind = VK::floating;
      v.d = x;
    } else {
      v.kind = VK::badnum;
    }
  }
  return R::ok;
}

R skip_value(Cursor& c, int depth);

R literal(Cursor& c, std::string_view word) {
  const auto left = static_cast<std::size_t>(c.end - c.p);
  const std::size_t n = left < word.size() ? left : word.size();
  if (std::memcmp(c.p, word.data(), n) != 0) return c.bail("a bad literal");
  if (n < word.size()) return R::end;
  c.p += word.size();
  return R::ok;
}

// Any value at c.p: kind and raw slice; a string decoded into v.s when ``decode``.
R read_value(Cursor& c, Val& v, bool decode, int depth) {
  if (c.p >= c.end) return R::end;
  const char* b = c.p;
  R r = R::ok;
  switch (*c.p) {
    case '"': {
      bool esc = false;
      r = scan_string(c, decode ? &v.s : nullptr, esc);
      v.kind = VK::string;
      break;
    }
    case '{':
      r = skip_value(c, depth);
      v.kind = VK::object;
      break;
    case '[':
      r = skip_value(c, depth);
      v.kind = VK::array;
      break;
    case 't':
      r = literal(c, "true");
      v.kind = VK::tru;
      break;
    case 'f':
      r = literal(c, "false");
      v.kind = VK::fals;
      break;
    case 'n':
      r = literal(c, "null");
      v.kind = VK::null;
      break;
    default:
      if (*c.p == '-' || (*c.p >= '0' && *c.p <= '9')) return scan_number(c, v);
      return c.bail("not a JSON value");
  }
  if (r != R::ok) return r;
  v.b = b;
  v.e = c.p;
  return R::ok;
}

R skip_value(Cursor& c, int depth) {
  if (c.p >= c.end) return R::end;
  const char open = *c.p;
  if (open != '{' && open != '[') {
    Val v;
    return read_value(c, v, false, depth);
  }
  if (depth >= max_depth) return c.bail("nesting too deep");
  const char close = open == '{' ? '}' : ']';
  ++c.p;
  skip_ws(c);
  if (c.p >= c.end) return R::end;
  if (*c.p == close) {
    ++c.p;
    return R::ok;
  }
  while (true) {
    if (open == '{') {
      if (*c.p != '"') return c.bail("an object key must be a string");
      bool esc = false;
      if (const R r = scan_string(c, nullptr, esc); r != R::ok) return r;
      skip_ws(c);
      if (c.p >= c.end) return R::end;
      if (*c.p != ':') return c.bail("expected ':'");
      ++c.p;
      skip_ws(c);
    }
    if (const R r = skip_value(c, depth + 1); r != R::ok) return r;
    skip_ws(c);
    if (c.p >= c.end) return R::end;
    if (*c.p == close) {
      ++c.p;
      return R::ok;
    }
    if (*c.p != ',') return c.bail("expected ',' or a closing bracket");
    ++c.p;
    skip_ws(c);
    if (c.p >= c.end) return R::end;
  }
}

// An object key at c.p (its quote): its raw bytes (no escapes allowed), then ':' and blanks.
R read_key(Cursor& c, std::string_view& key) {
  if (*c.p != '"') return c.bail("an object key must be a string");
  const char* b = c.p + 1;
  const char* q = plain_run(b, c.end);
  if (q < c.end && *q == '"') {  // plain ASCII (nearly every key)
    c.p = q + 1;
  } else {
    bool esc = false;
    if (const R r = scan_string(c, nullptr, esc); r != R::ok) return r;
    if (esc) return c.bail("an escaped key");
  }
  key = std::string_view(b, static_cast<std::size_t>(c.p - 1 - b));
  skip_ws(c);
  if (c.p >= c.end) return R::end;
  if (*c.p != ':') return c.bail("expected ':'");
  ++c.p;
  skip_ws(c);
  if (c.p >= c.end) return R::end;
  return R::ok;
}

// Calls ``member(key)`` for each member of the object at c.p (after its '{').
template <class F>
R members(Cursor& c, F&& member) {
  ++c.p;
  skip_ws(c);
  if (c.p >= c.end) return R::end;
  if (*c.p == '}') {
    ++c.p;
    return R::ok;
  }
  while (true) {
    std::string_view key;
    if (const R r = read_key(c, key); r != R::ok) return r;
    if (const R r = member(key); r != R::ok) return r;
    skip_ws(c);
    if (c.p >= c.end) return R::end;
    if (*c.p == '}') {
      ++c.p;
      return R::ok;
    }
    if (*c.p != ',') return c.bail("expected ',' or '}'");
    ++c.p;
    skip_ws(c);
    if (c.p >= c.end) return R::end;
  }
}

// The index of ``key`` in ``names`` (-1: none); names are told apart by length and first
// and last bytes before a full comparison.
template <std::size_t N>
int find_key(const std::string_view (&names)[N], std::string_view key) {
  const std::size_t n = key.size();
  if (n == 0) return -1;
  for (std::size_t k = 0; k < N; ++k) {
    const std::string_view& name = names[k];
    if (name.size() == n && name[0] == key[0] && name[n - 1] == key[n - 1] &&
        std::memcmp(name.data(), key.data(), n) == 0)
      return static_cast<int>(k);
  }
  return -1;
}

// One whole event at c.p into ``ev``.
R parse_event(Cursor& c, Ev& ev) {
  if (*c.p != '{') return c.bail("an event that is not an object");
  ev.reset();
  return members(c, [&](std::string_view key) -> R {
    const int k = find_key(ev_names, key);
    if (k < 0) return skip_value(c, 1);
    Val& v = ev.f[k];
    if (v.set()) return c.bail("a duplicate event key");
    if (k != e_args) {
      const bool decode = k == e_ph || k == e_cat || k == e_name || k == e_pid || k == e_tid ||
                          k == e_id;
      return read_value(c, v, decode, 1);
    }
    if (*c.p == 'n') {
      const R r = read_value(c, v, false, 1);
      if (r == R::ok && v.kind != VK::null) return c.bail("args is not an object");
      ev.args_null = true;
      return r;
    }
    if (*c.p != '{') return c.bail("args is not an object");
    v.kind = VK::object;
    return members(c, [&](std::string_view akey) -> R {
      const int j = find_key(arg_names, akey);
      if (j < 0) return skip_value(c, 2);
      Val& a = ev.a[j];
      if (a.set()) return c.bail("a duplicate argument key");
      return read_value(c, a, false, 2);
    });
  });
}

bool is_str(const Val& v, std::string_view s) { return v.kind == VK::string && v.s == s; }

// A number as Python's float() of the decoded value (ints rounded to nearest).
bool as_float(const Val& v, double& out) {
  if (v.kind == VK::integer) {
    out = static_cast<double>(v.i);
    return true;
  }
  if (v.kind == VK::floating) {
    out = v.d;
    return true;
  }
  return false;
}

// A value as a Values entry (int, NONE for None/absent-as-None, ABSENT), false when odd.
bool as_values(const Val& v, std::int64_t absent, std::int64_t& out) {
  switch (v.kind) {
    case VK::absent: out = absent; return true;
    case VK::null: out = none_v; return true;
    case VK::integer:
      if (v.i > odd_v) {
        out = v.i;
        return true;
      }
      return false;
    default: return false;
  }
}

bool as_key(const Val& v, TraceKey& k) {
  switch (v.kind) {
    case VK::absent:
    case VK::null: k.kind = 0; k.i = 0; k.s.clear(); return true;
    case VK::integer: k.kind = 1; k.i = v.i; k.s.clear(); return true;
    case VK::string: k.kind = 2; k.i = 0; k.s = v.s; return true;
    default: return false;
  }
}

void raw_of(const Val& v, RawText& out) {
  out.set = v.set();
  if (out.set) out.text.assign(v.b, static_cast<std::size_t>(v.e - v.b));
  else out.text.clear();
}

// A kernel's recorded ``grid`` or ``block`` as _collect._dim3 reads it: three non-negative
// ints (``ok``), anything else not well formed; R::bail for an int past int64 (Python keeps it).
R dim3(const Val& v, bool& ok, std::int64_t (&out)[3], std::string& why) {
  ok = false;
  if (v.kind != VK::array) return R::ok;
  const char* p = v.b + 1;  // past '[' (the text was validated as JSON when read)
  int n = 0;
  while (p < v.e) {
    while (p < v.e && blank(*p)) ++p;
    if (p >= v.e || *p == ']') break;
    if (n == 3) return R::ok;  // a fourth element
    const bool neg = *p == '-';
    const char* q = neg ? p + 1 : p;
    const char* d = q;
    while (q < v.e && *q >= '0' && *q <= '9') ++q;
    if (q == d || (q < v.e && (*q == '.' || *q == 'e' || *q == 'E'))) return R::ok;  // not an int
    std::int64_t x = 0;
    if (std::from_chars(d, q, x).ec != std::errc()) {  // past int64
      if (neg) return R::ok;  // a negative int: not well formed either way
      why = "a launch grid or block past int64";
      return R::bail;
    }
    if (neg && x != 0) return R::ok;
    out[n++] = x;
    p = q;
    while (p < v.e && blank(*p)) ++p;
    if (p < v.e && *p == ',') ++p;
  }
  ok = n == 3;
  return R::ok;
}

int cpu_code(const std::string& s) {
  if (s == "cpu_op") return 0;
  if (s == "user_annotation") return 1;
  if (s == "python_function") return 2;
  if (s == "cuda_runtime") return 3;
  if (s == "cuda_driver") return 4;
  return -1;
}

int gpu_code(const std::string& s) {
  if (s == "kernel") return 0;
  if (s == "gpu_memcpy") return 1;
  if (s == "gpu_memset") return 2;
  return -1;
}

void append_key(std::string& out, const TraceKey& k) {
  out.push_back(static_cast<char>('0' + k.kind));
  if (k.kind == 1) out.append(reinterpret_cast<const char*>(&k.i), sizeof k.i);
  if (k.kind == 2) {
    const std::uint64_t n = k.s.size();
    out.append(reinterpret_cast<const char*>(&n), sizeof n);
    out.append(k.s);
  }
}

}  // namespace

namespace detail {

/// Applies the Collector's rules to one parsed event (friend of TraceScanner).
struct EventCommit {
  TraceScanner& s;
  Ev& ev;

  R bail(const char* msg) {
    s.reason = msg;
    return R::bail;
  }

  std::int64_t name_id(const std::string& name) {
    auto it = s.name_ids_.find(name);
    if (it != s.name_ids_.end()) return it->second;
    const auto id = static_cast<std::int64_t>(s.names.size());
    s.names.push_back(name);
    s.name_ids_.emplace(name, id);
    return id;
  }

  std::int64_t record(ArgEntry&& e) {
    s.arglist.push_back(std::move(e));
    return static_cast<std::int64_t>(s.arglist.size());  // (index 0 is the empty dict)
  }

  void collective(ArgEntry& e) {
    raw_of(ev.a[a_coll], e.raw[f_coll]);
    raw_of(ev.a[a_group], e.raw[f_group]);
    raw_of(ev.a[a_dtype], e.raw[f_dtype]);
    raw_of(ev.a[a_in], e.raw[f_in]);
    raw_of(ev.a[a_out], e.raw[f_out]);
  }

  // A CPU op's recorded collective as its own arglist entry (kind 1), with the launch's
  // correlation id when ``has_corr``; returns the entry's id.
  std::int64_t cpu_collective(bool has_corr = false, std::int64_t corr = 0) {
    ArgEntry e;
    e.kind = 1;
    e.has_corr = has_corr;
    e.corr = corr;
    collective(e);
    return record(std::move(e));
  }

  std::int64_t shape_id() {
    std::string& key = s.key_;
    key.clear();
    const int fields[4] = {a_dims, a_types, a_concrete, a_strides};
    for (const int f : fields) {
      const Val& v = ev.a[f];
      if (!v.set()) {
        key.push_back('0');
        continue;
      }
      key.push_back('1');
      const std::uint64_t n = static_cast<std::uint64_t>(v.e - v.b);
      key.append(reinterpret_cast<const char*>(&n), sizeof n);
      key.append(v.b, n);
    }
    auto it = s.shape_ids_.find(key);
    if (it != s.shape_ids_.end()) return it->second;
    const auto id = static_cast<std::int64_t>(s.shapes.size() / 4 + 1);
    for (const int f : fields) {
      s.shapes.emplace_back();
      raw_of(ev.a[f], s.shapes.back());
    }
    s.shape_ids_.emplace(key, id);
    return id;
  }

  CpuColumns* thread() {
    TraceKey pid, tid;
    if (!as_key(ev.f[e_pid], pid) || !as_key(ev.f[e_tid], tid)) return nullptr;
    if (!s.threads.empty()) {
      CpuColumns& last = s.threads[s.last_thread_];
      if (last.pid == pid && last.tid == tid) return &last;
    }
    std::string key;
    append_key(key, pid);
    append_key(key, tid);
    auto it = s.thread_ids_.find(key);
    if (it == s.thread_ids_.end()) {
      it = s.thread_ids_.emplace(key, s.threads.size()).first;
      s.threads.emplace_back();
      s.threads.back().pid = pid;
      s.threads.back().tid = tid;
    }
    s.last_thread_ = it->second;
    return &s.threads[it->second];
  }

  R times(double& ts, double& dur) {
    const Val& d = ev.f[e_dur];
    dur = 0.0;
    if (!as_float(ev.f[e_ts], ts) || (d.set() && !as_float(d, dur)))
      return bail("a start or duration that is not a number");
    if (!(0.0 <= dur && dur <= max_us && -max_us <= ts && ts <= max_us))
      return bail("a start or duration out of range");
    return R::ok;
  }

  // The event's checked start and duration and its interned name (``bad_name``: the reason
  // to give up when the name is not a string).
  R timed_name(const char* bad_name, double& ts, double& dur, std::int64_t& nid) {
    if (const R r = times(ts, dur); r != R::ok) return r;
    const Val& nm = ev.f[e_name];
    if (nm.set() && nm.kind != VK::string) return bail(bad_name);
    static const std::string empty;
    nid = name_id(nm.set() ? nm.s : empty);
    return R::ok;
  }

  R cpu(int code) {
    double ts = 0.0, dur = 0.0;
    std::int64_t nid = 0;
    if (const R r = timed_name("a name that is not a string", ts, dur, nid); r != R::ok)
      return r;
    const Val& nm = ev.f[e_name];
    CpuColumns* cols = thread();
    if (cols == nullptr) return bail("a pid or tid of an unusual type");
    const bool has_args = ev.f[e_args].set() && !ev.args_null;
    std::int64_t shape = 0, ext = absent_v, seq = absent_v, aid = 0;
    if (code == 0 && has_args) {
      if (ev.a[a_dims].set() || ev.a[a_types].set() || ev.a[a_concrete].set())
        shape = shape_id();
      if (!as_values(ev.a[a_ext], absent_v, ext) || !as_values(ev.a[a_seq], absent_v, seq))
        return bail("an External id or Sequence number of an unusual type");
      if (ev.a[a_coll].set()) aid = cpu_collective();
    } else if (code >= 3 && has_args && ev.a[a_corr].set()) {
      const Val& corr = ev.a[a_corr];
      if (corr.kind != VK::integer || corr.i <= odd_v)
        return bail("a correlation id of an unusual type");
      s.launched_.insert(corr.i);
      cols->corr_pos.push_back(static_cast<std::int64_t>(cols->ts.size()));
      cols->corr_val.push_back(corr.i);
      if (ev.a[a_coll].set()) aid = cpu_collective(true, corr.i);
    } else if (code != 0) {
      if (has_args && ev.a[a_coll].set()) aid = cpu_collective();
      if (code == 1 && nm.set() && nm.s.rfind("ProfilerStep#", 0) == 0) {
        s.steps.push_back(ts);
        s.steps.push_back(ts + dur);
      }
    }
    cols->ts.push_back(ts);
    cols->dur.push_back(dur);
    cols->cat.push_back(static_cast<std::uint8_t>(code));
    cols->name.push_back(nid);
    cols->args.push_back(aid);
    cols->uid.push_back(s.uid++);
    cols->shape.push_back(shape);
    cols->ext.push_back(ext);
    cols->seq.push_back(seq);
    return R::ok;
  }

  // Whether the event's grid and block are both well formed (_collect.launch_dims) into
  // ``ok``; R::bail for an int past int64 in them.
  R launch_ok(bool& ok) {
    ok = false;
    if (!ev.a[a_grid].set() || !ev.a[a_block].set()) return R::ok;
    std::int64_t dims[3];
    bool grid_ok = false, block_ok = false;
    if (dim3(ev.a[a_grid], grid_ok, dims, s.reason) != R::ok ||
        dim3(ev.a[a_block], block_ok, dims, s.reason) != R::ok)
      return R::bail;
    ok = grid_ok && block_ok;
    return R::ok;
  }

  R gpu(int code) {
    double ts = 0.0, dur = 0.0;
    std::int64_t nid = 0;
    if (const R r = timed_name("a GPU name that is not a string", ts, dur, nid); r != R::ok)
      return r;
    std::int64_t aid = 0, stream = 0, corr = none_v, ext = none_v;
    const Val& tid = ev.f[e_tid];
    if (!ev.f[e_args].set() || ev.args_null) {
      if (!as_values(tid, none_v, stream)) return bail("a GPU tid of an unusual type");
    } else {
      const Val& d = ev.a[a_device];
      if (!ev.a[a_bytes].set() && !ev.a[a_coll].set() && d.kind == VK::integer) {
        if (!ev.a[a_grid].set()) {
          auto it = s.device_ids_.find(d.i);
          if (it == s.device_ids_.end()) {
            ArgEntry e;
            e.kind = 0;
            e.device = d.i;
            it = s.device_ids_.emplace(d.i, record(std::move(e))).first;
          }
          aid = it->second;
        } else {  // one shared entry per device and launch configuration
          ArgEntry e;
          e.kind = 3;
          e.device = d.i;
          bool grid_ok = false, block_ok = false;
          if (dim3(ev.a[a_grid], grid_ok, e.grid, s.reason) != R::ok ||
              dim3(ev.a[a_block], block_ok, e.block, s.reason) != R::ok)
            return R::bail;
          e.launch = grid_ok && block_ok;
          std::array<std::int64_t, 8> key{d.i, e.launch ? 1 : 0, 0, 0, 0, 0, 0, 0};
          if (e.launch) {
            for (int i = 0; i < 3; ++i) {
              key[static_cast<std::size_t>(2 + i)] = e.grid[i];
              key[static_cast<std::size_t>(5 + i)] = e.block[i];
            }
          }
          auto it = s.launch_ids_.find(key);
          if (it == s.launch_ids_.end()) it = s.launch_ids_.emplace(key, record(std::move(e))).first;
          aid = it->second;
        }
      } else if (d.kind == VK::bigint) {
        return bail("a device id outside int64");
      } else if (bool launch = false; launch_ok(launch) != R::ok) {
        return R::bail;
      } else if (d.set() || ev.a[a_bytes].set() || ev.a[a_coll].set() || launch) {
        ArgEntry e;
        e.kind = 2;
        raw_of(d, e.raw[f_device]);
        raw_of(ev.a[a_bytes], e.raw[f_bytes]);
        raw_of(ev.a[a_grid], e.raw[f_grid]);
        raw_of(ev.a[a_block], e.raw[f_block]);
        if (ev.a[a_coll].set()) collective(e);
        aid = record(std::move(e));
      }
      const Val& st = ev.a[a_stream].set() ? ev.a[a_stream] : tid;
      if (!as_values(st, none_v, stream) || !as_values(ev.a[a_corr], none_v, corr) ||
          !as_values(ev.a[a_ext], none_v, ext))
        return bail("a GPU stream, correlation or External id of an unusual type");
    }
    s.gpu.ts.push_back(ts);
    s.gpu.dur.push_back(dur);
    s.gpu.name.push_back(nid);
    s.gpu.cat.push_back(static_cast<std::uint8_t>(code));
    s.gpu.args.push_back(aid);
    s.gpu.stream.push_back(stream);
    s.gpu.corr.push_back(corr);
    s.gpu.ext.push_back(ext);
    return R::ok;
  }

  R flow() {
    Flow f;
    if (!as_key(ev.f[e_id], f.id)) return bail("a flow id of an unusual type");
    if (f.id.kind == 1 && s.launched_.count(f.id.i)) return R::ok;
    if (!as_key(ev.f[e_pid], f.pid) || !as_key(ev.f[e_tid], f.tid))
      return bail("a flow's pid or tid of an unusual type");
    if (ev.f[e_ts].set() && !as_float(ev.f[e_ts], f.ts))
      return bail("a flow start that is not a number");
    s.flows.push_back(std::move(f));
    return R::ok;
  }

  R apply() {
    const Val& ph = ev.f[e_ph];
    const Val& cat = ev.f[e_cat];
    if (is_str(ph, "X")) {
      if (!ev.f[e_ts].set()) return R::ok;
      if (cat.kind != VK::string) {
        if (cat.kind == VK::absent || cat.kind == VK::null) return R::ok;
        return bail("a category that is not a string");
      }
      const int code = cpu_code(cat.s);
      if (code >= 0) return cpu(code);
      const int g = gpu_code(cat.s);
      if (g >= 0) return gpu(g);
      return R::ok;
    }
    if (is_str(ph, "s") && is_str(cat, "ac2g")) return flow();
    return R::ok;
  }
};

}  // namespace detail

FeedStatus TraceScanner::feed(const char* data, std::size_t size, std::size_t& pos) {
  detail::Ev ev;  // (one per call: its strings keep their capacity from event to event)
  if (pos > size) {
    reason = "a position past the buffer";
    return FeedStatus::bail;
  }
  Cursor c{data + pos, data + size, &reason};
  while (true) {
    skip_ws(c);
    if (c.p >= c.end) {
      pos = static_cast<std::size_t>(c.p - data);
      return FeedStatus::more;
    }
    if (after_event_) {
      if (*c.p == ']') {
        ++c.p;
        pos = static_cast<std::size_t>(c.p - data);
        return FeedStatus::done;
      }
      if (*c.p != ',') {
        reason = "expected ',' or ']' after an event";
        return FeedStatus::bail;
      }
      ++c.p;
      after_event_ = false;
      continue;
    }
    const char* start = c.p;
    const R r = parse_event(c, ev);
    if (r == R::end) {
      pos = static_cast<std::size_t>(start - data);
      return FeedStatus::more;
    }
    if (r == R::bail) return FeedStatus::bail;
    detail::EventCommit commit{*this, ev};
    if (commit.apply() != R::ok) return FeedStatus::bail;
    after_event_ = true;
  }
}

}  // namespace roofline::trace
