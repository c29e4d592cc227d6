package dev.fgemma;

import java.util.Map;

/** One function call the model made: its name and arguments (valid against the tool's schema). */
public final class Call {
  private final String name;
  private final Map<String, Object> arguments;

  Call(String name, Map<String, Object> arguments) {
    this.name = name;
    this.arguments = arguments;
  }

  public String name() {
    return name;
  }

  /** The arguments as a Map (ordered as generated): String, Long, Double, Boolean, List, Map, null. */
  public Map<String, Object> arguments() {
    return arguments;
  }

  /** The arguments as JSON text (an OpenAI tool call's `arguments`). */
  public String argumentsJson() {
    return Json.write(arguments);
  }

  @Override
  public String toString() {
    return name + argumentsJson();
  }
}
