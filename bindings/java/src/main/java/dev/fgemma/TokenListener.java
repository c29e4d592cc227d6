package dev.fgemma;

/** Sees each generated token. A listener that throws cancels the call; the call then rethrows it. */
@FunctionalInterface
public interface TokenListener {
  void onToken(int token, String text);
}
