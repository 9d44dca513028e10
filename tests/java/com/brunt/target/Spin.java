package com.brunt.target;

/** A busy loop in application code, so a JFR recording has execution samples to show. */
final class Spin {
    private Spin() {}

    static long run(long ms) {
        long end = System.nanoTime() + ms * 1_000_000L;
        long x = 1;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 10_000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
        }
        return x;
    }
}
