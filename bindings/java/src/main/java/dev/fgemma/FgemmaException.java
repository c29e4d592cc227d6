package dev.fgemma;

/** Every failure fgemma reports: the C API's status code and the library's message (it names the
 * file, field or offset at fault). Unchecked, so Kotlin callers are not forced to catch it. */
public class FgemmaException extends RuntimeException {
  public static final int INVALID_ARGUMENT = 1;
  public static final int NOT_FOUND = 2;
  public static final int CORRUPT_FILE = 3;
  public static final int UNSUPPORTED = 4;
  public static final int OUT_OF_RANGE = 5;
  public static final int IO = 6;
  public static final int OUT_OF_MEMORY = 7;
  public static final int CANCELLED = 8;
  public static final int INTERNAL = 9;
  public static final int BUDGET = 10;

  private final int status;

  public FgemmaException(int status, String message) {
    super(message);
    this.status = status;
  }

  /** The fgemma_status code (FgemmaException.NOT_FOUND, ...). */
  public int status() {
    return status;
  }
}
