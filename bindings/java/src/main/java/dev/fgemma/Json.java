package dev.fgemma;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** A small JSON reader for the library's own output (call results): objects become ordered Maps,
 * arrays Lists, numbers Long when integral else Double, plus String, Boolean and null. Also writes a
 * value back as JSON text (a call's arguments). */
final class Json {
  private final String s;
  private int i;

  private Json(String s) {
    this.s = s;
  }

  static Object parse(String text) {
    Json j = new Json(text);
    Object v = j.value();
    j.space();
    if (j.i != text.length()) throw j.error("trailing characters");
    return v;
  }

  private FgemmaException error(String what) {
    return new FgemmaException(FgemmaException.INTERNAL, "result JSON at offset " + i + ": " + what);
  }

  private void space() {
    while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
  }

  private Object value() {
    space();
    if (i >= s.length()) throw error("unexpected end");
    char c = s.charAt(i);
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return string();
    if (s.startsWith("true", i)) { i += 4; return Boolean.TRUE; }
    if (s.startsWith("false", i)) { i += 5; return Boolean.FALSE; }
    if (s.startsWith("null", i)) { i += 4; return null; }
    return number();
  }

  private Map<String, Object> object() {
    Map<String, Object> m = new LinkedHashMap<>();
    i++;
    space();
    if (i < s.length() && s.charAt(i) == '}') { i++; return m; }
    while (true) {
      space();
      String key = string();
      space();
      expect(':');
      m.put(key, value());
      space();
      if (i < s.length() && s.charAt(i) == ',') { i++; continue; }
      expect('}');
      return m;
    }
  }

  private List<Object> array() {
    List<Object> a = new ArrayList<>();
    i++;
    space();
    if (i < s.length() && s.charAt(i) == ']') { i++; return a; }
    while (true) {
      a.add(value());
      space();
      if (i < s.length() && s.charAt(i) == ',') { i++; continue; }
      expect(']');
      return a;
    }
  }

  private void expect(char c) {
    if (i >= s.length() || s.charAt(i) != c) throw error("expected '" + c + "'");
    i++;
  }

  private String string() {
    expect('"');
    StringBuilder b = new StringBuilder();
    while (i < s.length()) {
      char c = s.charAt(i++);
      if (c == '"') return b.toString();
      if (c != '\\') { b.append(c); continue; }
      if (i >= s.length()) break;
      char e = s.charAt(i++);
      switch (e) {
        case 'n': b.append('\n'); break;
        case 't': b.append('\t'); break;
        case 'r': b.append('\r'); break;
        case 'b': b.append('\b'); break;
        case 'f': b.append('\f'); break;
        case 'u':
          if (i + 4 > s.length()) throw error("short \\u escape");
          b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
          i += 4;
          break;
        default: b.append(e);
      }
    }
    throw error("unterminated string");
  }

  private Object number() {
    int start = i;
    while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
    String t = s.substring(start, i);
    if (t.isEmpty()) throw error("unexpected character");
    try {
      if (t.indexOf('.') < 0 && t.indexOf('e') < 0 && t.indexOf('E') < 0) return Long.parseLong(t);
      return Double.parseDouble(t);
    } catch (NumberFormatException ex) {
      try {
        return Double.parseDouble(t);
      } catch (NumberFormatException ex2) {
        throw error("bad number " + t);
      }
    }
  }

  static String write(Object v) {
    StringBuilder b = new StringBuilder();
    write(v, b);
    return b.toString();
  }

  private static void write(Object v, StringBuilder b) {
    if (v == null) {
      b.append("null");
    } else if (v instanceof String) {
      quote((String) v, b);
    } else if (v instanceof Map) {
      b.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
        if (!first) b.append(',');
        first = false;
        quote(String.valueOf(e.getKey()), b);
        b.append(':');
        write(e.getValue(), b);
      }
      b.append('}');
    } else if (v instanceof List) {
      b.append('[');
      boolean first = true;
      for (Object o : (List<?>) v) {
        if (!first) b.append(',');
        first = false;
        write(o, b);
      }
      b.append(']');
    } else {
      b.append(v);
    }
  }

  private static void quote(String s, StringBuilder b) {
    b.append('"');
    for (int k = 0; k < s.length(); k++) {
      char c = s.charAt(k);
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    b.append('"');
  }
}
