package dev.fgemma;

import java.nio.charset.StandardCharsets;

/** The JNI entry points (src/main/c/fgemma_jni.c), a thin layer over the C API. Strings cross as
 * NUL-terminated UTF-8 byte arrays (not JNI's modified UTF-8), handles as longs. */
final class Native {
  private Native() {}

  static {
    String explicit = System.getProperty("fgemma.jni.library");
    if (explicit != null) {
      System.load(explicit);
    } else {
      System.loadLibrary("fgemma_jni");
    }
  }

  static byte[] utf8(String s) {
    if (s == null) return null;
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    byte[] z = new byte[b.length + 1];
    System.arraycopy(b, 0, z, 0, b.length);
    return z;
  }

  static String string(byte[] utf8) {
    return utf8 == null ? null : new String(utf8, StandardCharsets.UTF_8);
  }

  /** Called from C for each token (bytes may end inside a UTF-8 sequence: replaced, never fatal). */
  static void dispatch(TokenListener listener, int token, byte[] text) {
    listener.onToken(token, string(text));
  }

  static native byte[] version();

  static native int abiVersion();

  static native long modelLoad(byte[] path, byte[] tokenizerPath);

  static native void modelFree(long model);

  static native int modelVocabSize(long model);

  static native long callerNew(long model, byte[] cachePath, int nCtx, int nThreads, int maxTokens,
                               double timeBudgetMs, boolean trustContentTokens, boolean draft,
                               byte[] loraPath, float loraScale, boolean sharePasses);

  static native int[] callerPromptTokens(long caller);

  static native void callerFree(long caller);

  static native byte[] callerCall(long caller, byte[] tools, byte[] messages, byte[] toolChoice,
                                  TokenListener listener);

  static native void callerCancel(long caller);
}
