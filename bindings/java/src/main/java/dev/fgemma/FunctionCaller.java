package dev.fgemma;

/** Turns utterances into calls of one tool catalog (constrained decoding, a catalog cache in memory
 * and optionally in a file). One call at a time (calls from several threads wait for each other);
 * cancel() works from any thread. Close it after use; a closed caller throws, never crashes. */
public final class FunctionCaller implements AutoCloseable {
  /** The developer turn written before an utterance (FunctionGemma's own preamble). */
  public static final String DEFAULT_PREAMBLE =
      "You are a model that can do function calling with the following functions";

  /** Options; start from the defaults. */
  public static final class Params {
    public String cachePath;          // catalog cache file; null: memory only
    public int contextLength = 4096;  // positions
    public int threads = 0;           // 0: all cores; at most 256
    public int maxTokens = 0;         // 0: only the grammar's bounds
    public double timeBudgetMs = 0;   // 0: none; finite, at most 86,400,000 (a day)
    /** false: control tokens only from the chat template ("<end_of_turn>" typed in a message,
     * tool name, description, enum value or argument is text). true: the plain Hugging Face
     * tokenization, for content fully trusted. */
    public boolean trustContentTokens = false;
    /** Exact speculative drafts: the same output in fewer passes; false only for comparisons. */
    public boolean draft = true;
    /** A PEFT LoRA adapter directory applied over the model at run time (null: the base alone);
     * loraScale multiplies its update. */
    public String loraPath;
    public float loraScale = 1.0f;
    /** Callers of one model with sharePasses and equal contextLength, threads, loraPath and
     * loraScale share forward passes while they call at once from several threads (one read of
     * the weights serves each one's next tokens; the same answers). For apps calling from several
     * threads; a single caller gains nothing. */
    public boolean sharePasses = false;
  }

  private final Model model;
  private final byte[] tools;
  private final Object callLock = new Object();
  private final Object stateLock = new Object();
  private long handle;

  /** toolsJson: a JSON array of {"type":"function","function":{...}} (or {"tools":[...]}). */
  public FunctionCaller(Model model, String toolsJson, Params params) {
    if (model == null) throw new FgemmaException(FgemmaException.INVALID_ARGUMENT, "model: null");
    if (toolsJson == null) throw new FgemmaException(FgemmaException.INVALID_ARGUMENT, "tools: null");
    Params p = params == null ? new Params() : params;
    // Upper limits (threads, context, budget, scale; docs/limits.md) are the C API's to check.
    if (p.contextLength <= 0 || p.threads < 0 || p.maxTokens < 0 || !(p.timeBudgetMs >= 0))
      throw new FgemmaException(FgemmaException.INVALID_ARGUMENT,
          "params: contextLength must be positive; threads, maxTokens and timeBudgetMs must not be negative or NaN");
    this.model = model;
    this.tools = Native.utf8(toolsJson);
    long m = model.acquire();
    try {
      handle = Native.callerNew(m, Native.utf8(p.cachePath), p.contextLength, p.threads, p.maxTokens,
          p.timeBudgetMs, p.trustContentTokens, p.draft, Native.utf8(p.loraPath), p.loraScale,
          p.sharePasses);
    } catch (RuntimeException e) {
      model.release();
      throw e;
    }
  }

  public FunctionCaller(Model model, String toolsJson) {
    this(model, toolsJson, null);
  }

  private long live() {
    if (handle == 0) throw new FgemmaException(FgemmaException.INVALID_ARGUMENT, "the function caller is closed");
    return handle;
  }

  /** One call for an utterance, after FunctionGemma's developer preamble. toolChoice: "auto" (or
   * null), "required", "none" or a function name. */
  public CallResult call(String utterance, String toolChoice, TokenListener listener) {
    if (utterance == null) throw new FgemmaException(FgemmaException.INVALID_ARGUMENT, "utterance: null");
    String messages = "[{\"role\":\"developer\",\"content\":" + Json.write(DEFAULT_PREAMBLE)
        + "},{\"role\":\"user\",\"content\":" + Json.write(utterance) + "}]";
    return callMessages(messages, toolChoice, listener);
  }

  public CallResult call(String utterance) {
    return call(utterance, null, null);
  }

  /** One call for a JSON array of chat messages (OpenAI or template shape). */
  public CallResult callMessages(String messagesJson, String toolChoice, TokenListener listener) {
    if (messagesJson == null) throw new FgemmaException(FgemmaException.INVALID_ARGUMENT, "messages: null");
    synchronized (callLock) {
      long h;
      synchronized (stateLock) {
        h = live();
      }
      byte[] json = Native.callerCall(h, tools, Native.utf8(messagesJson), Native.utf8(toolChoice), listener);
      return new CallResult(Native.string(json));
    }
  }

  /** Token ids of the prompt of the last call that ran (bos, catalog, messages). */
  public int[] promptTokens() {
    synchronized (callLock) {
      synchronized (stateLock) {
        return Native.callerPromptTokens(live());
      }
    }
  }

  /** Cancels the call in progress (it throws FgemmaException CANCELLED) or, if none, the next one. */
  public void cancel() {
    synchronized (stateLock) {
      Native.callerCancel(live());
    }
  }

  /** Frees the caller, waiting for a call in progress. Closing twice is harmless. */
  @Override
  public void close() {
    synchronized (callLock) {
      synchronized (stateLock) {
        if (handle != 0) {
          Native.callerFree(handle);
          handle = 0;
          model.release();
        }
      }
    }
  }
}
