package dev.fgemma;

/** A loaded model (weights memory-mapped, tokenizer, chat template), immutable and shareable by
 * any number of FunctionCallers on any threads. close() frees it once the last caller made from it
 * is closed too; a closed model throws FgemmaException when used, never crashes. */
public final class Model implements AutoCloseable {
  /** Load options; start from the defaults. */
  public static final class Params {
    /** tokenizer.json or its directory; null: beside the model or inside the GGUF. */
    public String tokenizerPath;
  }

  private long handle;
  private boolean closed;
  private int users;

  private Model(long handle) {
    this.handle = handle;
  }

  /** path: a Hugging Face directory, a .safetensors file or a .gguf file. */
  public static Model load(String path, Params params) {
    if (path == null) throw new FgemmaException(FgemmaException.INVALID_ARGUMENT, "path: null");
    Params p = params == null ? new Params() : params;
    return new Model(Native.modelLoad(Native.utf8(path), Native.utf8(p.tokenizerPath)));
  }

  public static Model load(String path) {
    return load(path, null);
  }

  public static String version() {
    return Native.string(Native.version());
  }

  public synchronized int vocabSize() {
    return Native.modelVocabSize(live());
  }

  private long live() {
    if (closed) throw new FgemmaException(FgemmaException.INVALID_ARGUMENT, "the model is closed");
    return handle;
  }

  synchronized long acquire() {
    long h = live();
    users++;
    return h;
  }

  synchronized void release() {
    users--;
    freeIfUnused();
  }

  private void freeIfUnused() {
    if (closed && users == 0 && handle != 0) {
      Native.modelFree(handle);
      handle = 0;
    }
  }

  @Override
  public synchronized void close() {
    closed = true;
    freeIfUnused();
  }
}
