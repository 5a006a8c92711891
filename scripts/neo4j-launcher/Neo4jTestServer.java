// A Neo4j 5 Community DBMS for the graph-store tests, embedded in one JVM
// so that it can be built from Maven Central artifacts alone (the server
// distribution is not published there). `scripts/neo4j-test-server.sh`
// resolves the class path and compiles this file; see that script for usage.
//
//   java -cp CLASSES:LIB/* Neo4jTestServer PORT HOME [--delete-on-exit]
//
// It serves Bolt (no TLS) on 127.0.0.1:PORT, keeps its databases, logs and
// initial user file under HOME, and requires authentication as `neo4j` with
// the password in NEO4J_TEST_PASSWORD. Once Bolt accepts connections it
// prints `neo4j ready on bolt://127.0.0.1:PORT` on stdout; SIGTERM or SIGINT
// shuts the DBMS down cleanly (and deletes HOME with --delete-on-exit).

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Stream;
import org.neo4j.cli.ExecutionContext;
import org.neo4j.commandline.admin.security.SetInitialPasswordCommand;
import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.io.ByteUnit;
import org.neo4j.io.fs.DefaultFileSystemAbstraction;
import org.neo4j.io.fs.FileSystemAbstraction;
import picocli.CommandLine;

public final class Neo4jTestServer {
    private static final String DEFAULT_PASSWORD = "trellis-test-password";

    public static void main(String[] args) throws Exception {
        if (args.length < 2 || args.length > 3
                || (args.length == 3 && !args[2].equals("--delete-on-exit"))) {
            System.err.println("usage: Neo4jTestServer PORT HOME [--delete-on-exit]");
            System.exit(2);
        }
        int port = Integer.parseInt(args[0]);
        Path home = Path.of(args[1]).toAbsolutePath();
        boolean deleteOnExit = args.length == 3;
        String password = System.getenv().getOrDefault("NEO4J_TEST_PASSWORD", DEFAULT_PASSWORD);
        Files.createDirectories(home);

        // The initial user file is read only when the system database is
        // created, which happens inside build(), before Bolt starts
        // listening; so a client can never reach the server while `neo4j`
        // still has the default password. This is the same command as
        // `neo4j-admin dbms set-initial-password`; it also enforces Neo4j's
        // minimum password length (8). In a HOME that already holds a
        // database the file is ignored and the earlier password stays.
        int status;
        try (FileSystemAbstraction fs = new DefaultFileSystemAbstraction()) {
            // Its confirmation goes to stderr: stdout is kept for the ready
            // line.
            ExecutionContext context = new ExecutionContext(
                    home, home.resolve("conf"), System.err, System.err, fs);
            status = new CommandLine(new SetInitialPasswordCommand(context)).execute(password);
        }
        if (status != 0) {
            System.err.println("could not set the initial password (exit " + status + ")");
            System.exit(1);
        }

        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
                .setConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
                // The tests speak Bolt only.
                .setConfig(HttpConnector.enabled, false)
                .setConfig(HttpsConnector.enabled, false)
                .setConfig(GraphDatabaseSettings.auth_enabled, true)
                // Test data is tiny: a small page cache, no preallocated
                // transaction logs (each database would reserve the full
                // 256 MiB rotation size on disk up front) and no old ones.
                .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(256))
                .setConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                .setConfig(GraphDatabaseSettings.keep_logical_logs, "false")
                // No phoning home from a test machine.
                .setConfig(GraphDatabaseSettings.udc_enabled, false)
                // Bolt's event loops otherwise wait for 5 quiet seconds each
                // (two of them) before stopping, so SIGTERM took 10 s.
                .setConfig(GraphDatabaseInternalSettings.netty_server_shutdown_quiet_period, 0)
                .build();

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                dbms.shutdown();
                if (deleteOnExit) {
                    deleteTree(home);
                }
            } finally {
                stopped.countDown();
            }
        }, "neo4j-test-server-shutdown"));

        // build() returns with Bolt bound; waiting for the default database
        // as well means the first query after the ready line cannot fail
        // with "database unavailable".
        String database = GraphDatabaseSettings.DEFAULT_DATABASE_NAME;
        if (!dbms.database(database).isAvailable(Duration.ofMinutes(2).toMillis())) {
            System.err.println("database " + database + " did not become available");
            System.exit(1);
        }
        System.out.println("neo4j ready on bolt://127.0.0.1:" + port);
        System.out.flush();
        // Keep the JVM alive until a signal runs the shutdown hook.
        stopped.await();
    }

    private static void deleteTree(Path root) {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path path : (Iterable<Path>) paths.sorted(Comparator.reverseOrder())::iterator) {
                Files.deleteIfExists(path);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
