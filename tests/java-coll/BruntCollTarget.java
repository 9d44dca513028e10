// Minimal Java target for the collectors' end-to-end tests (plain JDK, no
// build tool): an HTTP server whose /contended endpoint holds one monitor
// for 20 ms, so concurrent requests leave real BLOCKED threads in dumps and
// jdk.JavaMonitorEnter events in JFR. /alloc churns the heap.
// Usage: java -cp DIR BruntCollTarget PORT [marker...]
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;

public class BruntCollTarget {
    static final Object INVENTORY = new Object();
    static long counter;
    static volatile byte[] sink;

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 256);
        s.createContext("/contended", ex -> {
            synchronized (INVENTORY) {
                counter++;
                pause(20);
            }
            reply(ex, "ok");
        });
        s.createContext("/alloc", ex -> {
            for (int i = 0; i < 64; i++) {
                sink = new byte[64 * 1024];
            }
            reply(ex, "ok");
        });
        s.createContext("/health", ex -> reply(ex, "up"));
        s.setExecutor(Executors.newFixedThreadPool(16));
        s.start();
        System.out.println("listening on " + port);
    }

    static void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static void reply(HttpExchange ex, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        ex.sendResponseHeaders(200, b.length);
        try (OutputStream o = ex.getResponseBody()) {
            o.write(b);
        }
    }
}
