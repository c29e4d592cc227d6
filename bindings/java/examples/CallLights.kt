// An utterance to a function call with fgemma.jar from Kotlin:
// kotlinc -cp fgemma.jar CallLights.kt -d out && kotlin -cp fgemma.jar:out CallLightsKt MODEL
import dev.fgemma.FgemmaException
import dev.fgemma.FunctionCaller
import dev.fgemma.Model
import kotlin.system.exitProcess

const val TOOLS = """[{"type":"function","function":{"name":"set_lights",
  "description":"Switch the lights of a room on or off","parameters":{"type":"object",
  "required":["room","on"],"properties":{"room":{"type":"string"},"on":{"type":"boolean"}}}}}]"""

fun main(args: Array<String>) {
  val params = FunctionCaller.Params().apply { cachePath = "lights-kt.cache" }
  try {
    Model.load(args[0]).use { model ->
      FunctionCaller(model, TOOLS, params).use { caller ->
        // A TokenListener is a Java functional interface: a Kotlin lambda serves.
        val result = caller.call("Turn on the kitchen lights", "required") { _, text -> print(text) }
        println()
        for (call in result.calls()) println("${call.name()} ${call.argumentsJson()}")
      }
    }
  } catch (e: FgemmaException) {
    System.err.println("fgemma error ${e.status()}: ${e.message}")
    exitProcess(1)
  }
}
