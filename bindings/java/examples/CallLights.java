import dev.fgemma.Call;
import dev.fgemma.CallResult;
import dev.fgemma.FgemmaException;
import dev.fgemma.FunctionCaller;
import dev.fgemma.Model;

/** An utterance to a function call with fgemma.jar: java -cp fgemma.jar:. CallLights MODEL */
public class CallLights {
  static final String TOOLS = "[{\"type\":\"function\",\"function\":{\"name\":\"set_lights\","
      + "\"description\":\"Switch the lights of a room on or off\",\"parameters\":{\"type\":\"object\","
      + "\"required\":[\"room\",\"on\"],\"properties\":{\"room\":{\"type\":\"string\"},"
      + "\"on\":{\"type\":\"boolean\"}}}}}]";

  public static void main(String[] args) {
    FunctionCaller.Params params = new FunctionCaller.Params();
    params.cachePath = "lights.cache";  // the catalog's prefill, reused by the next run
    try (Model model = Model.load(args[0]);
         FunctionCaller caller = new FunctionCaller(model, TOOLS, params)) {
      CallResult result = caller.call("Turn on the kitchen lights", "required",
          (token, text) -> System.out.print(text));  // streamed tokens
      System.out.println();
      for (Call call : result.calls()) {
        System.out.println(call.name() + " " + call.arguments() + " " + call.argumentsJson());
      }
    } catch (FgemmaException e) {
      System.err.println("fgemma error " + e.status() + ": " + e.getMessage());
      System.exit(1);
    }
  }
}
