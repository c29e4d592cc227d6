package dev.fgemma;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/** The outcome of FunctionCaller.call: the calls (empty when the model answered in text), the text,
 * and the library's whole outcome JSON (timing, cache use, an invalid output's error). */
public final class CallResult {
  private final List<Call> calls;
  private final String text;
  private final String json;

  @SuppressWarnings("unchecked")
  CallResult(String json) {
    this.json = json;
    Map<String, Object> o = (Map<String, Object>) Json.parse(json);
    List<Call> list = new ArrayList<>();
    for (Object c : (List<Object>) o.get("calls")) {
      Map<String, Object> m = (Map<String, Object>) c;
      list.add(new Call((String) m.get("name"), (Map<String, Object>) m.get("arguments")));
    }
    this.calls = Collections.unmodifiableList(list);
    this.text = (String) o.get("text");
  }

  public List<Call> calls() {
    return calls;
  }

  /** Text the model wrote instead of (or besides) calls; null when none. */
  public String text() {
    return text;
  }

  /** "tool_calls" when the model called a function, else "stop". */
  public String finishReason() {
    return calls.isEmpty() ? "stop" : "tool_calls";
  }

  /** The outcome JSON exactly as the C API's fgemma_caller_result_json gives it. */
  public String json() {
    return json;
  }
}
