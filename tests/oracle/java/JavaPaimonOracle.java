// Test oracle: Apache Paimon 1.0 (Java), driven from the interop tests as a subprocess.
//
// It is our own small program, compiled by `make java-oracle` with `javac -cp <bundle jar>`
// against the Paimon bundle that the PyPI package paimon-python-ali ships. It never runs
// inside lakectl: tests call it and compare its answers with lakectl's.
//
//   read <table-path> [--branch NAME] [--snapshot N | --tag NAME | --incremental-between A,B]
//        [--filter-equal COLUMN JSON-VALUE] [--filter OP COLUMN JSON-VALUE]...
//        [--with-kind] [--option KEY=VALUE]... [--keep-delete]
//   reads <file>: many reads in one JVM, a JSON array of read's arguments per line
//       Prints each row as a JSON array (values in the normal form below), one per line, then
//       a last line {"meta": {...}} with the row count and the snapshot that was read. With
//       --with-kind each row starts with its row kind ("+I", "-U", "+U", "-D").
//       --filter (repeatable, the filters ANDed): Java's PredicateBuilder OP (equal, notEqual,
//       lessThan, lessOrEqual, greaterThan, greaterOrEqual, in and notIn with a JSON array,
//       between with [low, high], isNull, isNotNull with null) on COLUMN; Java prunes by it and
//       its reader drops the rows it rejects (executeFilter).
//   catalog <spec.json>
//       Opens the catalog "catalog" describes (Paimon's own options: metastore=jdbc, uri,
//       warehouse, jdbc.user, jdbc.password, catalog-key, lock.enabled, lock-acquire-timeout,
//       lock-check-max-sleep, ...) with CatalogFactory.createCatalog, as Flink and Spark do, and runs
//       "steps" through it: create-database, create-table, write, writes, read, list-databases,
//       list-tables, rename-table, drop-table, drop-database. Prints one JSON line per step as
//       it finishes (flushed, so a test can follow a long run), and "writes" also one line
//       before each of its commits ({"attempt": i}) and one after ({"committed": i,
//       "snapshot": id}). A table is named "db.t"; its commits take the catalog's lock when
//       lock.enabled is true (Java's JdbcCatalogLock on paimon_distributed_locks).
//   run <spec.json>
//       Creates a table (optional "create"), then runs "steps" in order (write, compact,
//       expire, tag, set-option, create-branch). Prints {"meta": {...}} with the latest snapshot
//       after each step (of the step's branch). A step with "branch" runs on the catalog's
//       db.t$branch_NAME, as a read with --branch does (the table must then live in
//       <warehouse>/<db>.db/<table>).
//
// Normal form of values (the Python side, tests/interop/java_oracle.py, uses the same):
//   strings as they are; DECIMAL as a plain string ("10.50"); BINARY/VARBINARY as base64;
//   DATE as "YYYY-MM-DD"; TIME as milliseconds of the day; TIMESTAMP and TIMESTAMP_LTZ as
//   "YYYY-MM-DDTHH:MM:SS.nnnnnnnnn" (UTC for LTZ); float NaN/Infinity as the strings "NaN",
//   "Infinity", "-Infinity"; ARRAY as a list; MAP as a list of [key, value] pairs; ROW as a list.

import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.paimon.append.UnawareAppendCompactionTask;
import org.apache.paimon.append.UnawareAppendTableCompactionCoordinator;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.FileSystemCatalog;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.fs.Path;
import org.apache.paimon.fs.local.LocalFileIO;
import org.apache.paimon.index.HashBucketAssigner;
import org.apache.paimon.manifest.ManifestEntry;
import org.apache.paimon.operation.AppendOnlyFileStoreWrite;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.options.Options;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.schema.SchemaManager;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.table.BucketMode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.FileStoreTableFactory;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.RowPartitionKeyExtractor;
import org.apache.paimon.table.sink.TableWriteImpl;
import org.apache.paimon.table.source.InnerTableRead;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.TableRead;
import org.apache.paimon.table.source.SnapshotNotExistPlan;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.StreamTableScan;
import org.apache.paimon.table.source.TableScan;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;

public class JavaPaimonOracle {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final DateTimeFormatter TS = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSSSSSSS");

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            throw new IllegalArgumentException("usage: read <table> [...] | run <spec.json> | catalog <spec.json> | reads <requests.jsonl> | train <spec.json> <requests.jsonl>");
        }
        switch (args[0]) {
            case "read":
                read(args);
                break;
            case "run":
                run(JSON.readTree(Files.readAllBytes(Paths.get(args[1]))));
                break;
            case "reads":
                reads(args[1]);
                break;
            case "catalog":
                catalog(JSON.readTree(Files.readAllBytes(Paths.get(args[1]))));
                break;
            case "train":
                // tests/interop/java_cds.py: one JVM through a run and then reads, whose
                // loaded classes become the class-data archive later JVMs start from.
                run(JSON.readTree(Files.readAllBytes(Paths.get(args[1]))));
                reads(args[2]);
                break;
            default:
                throw new IllegalArgumentException("unknown command " + args[0]);
        }
    }

    // One JVM for many reads: each line of the file is a JSON array of read's arguments
    // (after "read"); each read's output ends with its meta line.
    private static void reads(String requests) throws Exception {
        for (String line : Files.readAllLines(Paths.get(requests))) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode readArgs = JSON.readTree(line);
            String[] argv = new String[readArgs.size() + 1];
            argv[0] = "read";
            for (int i = 0; i < readArgs.size(); i++) {
                argv[i + 1] = readArgs.get(i).asText();
            }
            read(argv);
        }
    }

    private static FileStoreTable open(String path) {
        return FileStoreTableFactory.create(LocalFileIO.create(), new Path(path));
    }

    // A branch is opened as Flink and Spark users address it: by the identifier
    // db.t$branch_NAME, which the filesystem catalog of the table's warehouse resolves (the
    // table lives in <warehouse>/<db>.db/<t>). Time travel then applies to the branch.
    private static FileStoreTable open(String path, String branch) throws Exception {
        if (branch == null) {
            return open(path);
        }
        java.nio.file.Path table = Paths.get(path).toAbsolutePath().normalize();
        java.nio.file.Path database = table.getParent();
        String dbDir = database.getFileName().toString();
        if (!dbDir.endsWith(".db")) {
            throw new IllegalArgumentException("a branch is read through the catalog: " + path
                    + " is not <warehouse>/<db>.db/<table>");
        }
        Identifier id = Identifier.fromString(
                dbDir.substring(0, dbDir.length() - 3) + "." + table.getFileName() + "$branch_" + branch);
        Path warehouse = new Path(database.getParent().toString());
        return (FileStoreTable) new FileSystemCatalog(LocalFileIO.create(), warehouse).getTable(id);
    }

    // ---------------------------------------------------------------- read

    private static void read(String[] args) throws Exception {
        Map<String, String> travel = new HashMap<>();
        List<String[]> filters = new ArrayList<>();
        boolean withKind = false;
        boolean keepDelete = false;
        String branch = null;
        Long streamFrom = null;
        for (int i = 2; i < args.length; i++) {
            switch (args[i]) {
                case "--snapshot":
                    travel.put("scan.snapshot-id", args[++i]);
                    break;
                case "--tag":
                    travel.put("scan.tag-name", args[++i]);
                    break;
                case "--incremental-between":
                    travel.put("incremental-between", args[++i]);
                    break;
                case "--with-kind":
                    withKind = true;
                    break;
                case "--option":
                    // any read option, KEY=VALUE (e.g. incremental-between-scan-mode=delta)
                    String[] option = args[++i].split("=", 2);
                    travel.put(option[0], option[1]);
                    break;
                case "--keep-delete":
                    // retractions kept, as Paimon's audit_log table reads (forceKeepDelete)
                    keepDelete = true;
                    break;
                case "--stream-from":
                    // a streaming read, as a Flink job started with scan.mode=from-snapshot:
                    // the changes of snapshot N and every later one, as the follow-up
                    // scanner of the table's changelog producer picks them
                    streamFrom = Long.parseLong(args[++i]);
                    travel.put("scan.mode", "from-snapshot");
                    travel.put("scan.snapshot-id", args[i]);
                    break;
                case "--stream-from-timestamp":
                    // the same, started as scan.mode=from-timestamp: the changes of the
                    // snapshots (or retained changelogs) committed at or after the time
                    streamFrom = Long.parseLong(args[++i]);
                    travel.put("scan.mode", "from-timestamp");
                    travel.put("scan.timestamp-millis", args[i]);
                    break;
                case "--branch":
                    branch = args[++i];
                    break;
                case "--filter-equal":
                    filters.add(new String[] {"equal", args[++i], args[++i]});
                    break;
                case "--filter":
                    filters.add(new String[] {args[++i], args[++i], args[++i]});
                    break;
                default:
                    throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (!filters.isEmpty()) {
            // Java 1.0's AppendOnlyFileStoreScan.testFileIndex fills a plain HashMap from the
            // parallel manifest readers (a ConcurrentModificationException in CI): one thread.
            travel.put("scan.manifest.parallelism", "1");
        }
        // The branch first, then time travel on it: a copy's options keep the branch.
        FileStoreTable table = open(args[1], branch);
        if (!travel.isEmpty()) {
            table = table.copy(travel);
        }
        RowType rowType = table.rowType();
        ReadBuilder builder = table.newReadBuilder();
        if (!filters.isEmpty()) {
            List<Predicate> all = new ArrayList<>();
            for (String[] filter : filters) {
                all.add(predicate(rowType, filter[0], filter[1], JSON.readTree(filter[2])));
            }
            builder = builder.withFilter(PredicateBuilder.and(all));
        }
        List<Split> splits = streamFrom == null ? builder.newScan().plan().splits() : streamed(table, builder);
        long rows = 0;
        StringBuilder out = new StringBuilder();
        TableRead tableRead = builder.newRead().executeFilter();
        if (keepDelete) {
            ((InnerTableRead) tableRead).forceKeepDelete();
        }
        try (RecordReader<InternalRow> reader = tableRead.createReader(splits)) {
            RecordReader.RecordIterator<InternalRow> batch;
            while ((batch = reader.readBatch()) != null) {
                InternalRow row;
                while ((row = batch.next()) != null) {
                    ArrayNode json = rowToJson(row, rowType);
                    if (withKind) {
                        json.insert(0, row.getRowKind().shortString());
                    }
                    out.append(JSON.writeValueAsString(json)).append('\n');
                    rows++;
                }
                batch.releaseBatch();
            }
        }
        System.out.print(out);
        ObjectNode meta = NODES.objectNode();
        meta.put("rows", rows);
        meta.put("splits", splits.size());
        Long snapshot = table.snapshotManager().latestSnapshotId();
        meta.put("latest_snapshot", snapshot);
        ArrayNode names = meta.putArray("columns");
        rowType.getFieldNames().forEach(names::add);
        ObjectNode wrapper = NODES.objectNode();
        wrapper.set("meta", meta);
        System.out.println(JSON.writeValueAsString(wrapper));
    }

    // One of Java's predicates: OP on COLUMN with the literal(s) in the normal form.
    private static Predicate predicate(RowType rowType, String op, String column, JsonNode value) {
        int index = rowType.getFieldNames().indexOf(column);
        if (index < 0) {
            throw new IllegalArgumentException("no column " + column);
        }
        DataType type = rowType.getTypeAt(index);
        PredicateBuilder predicates = new PredicateBuilder(rowType);
        switch (op) {
            case "equal":
                return predicates.equal(index, toInternal(type, value));
            case "notEqual":
                return predicates.notEqual(index, toInternal(type, value));
            case "lessThan":
                return predicates.lessThan(index, toInternal(type, value));
            case "lessOrEqual":
                return predicates.lessOrEqual(index, toInternal(type, value));
            case "greaterThan":
                return predicates.greaterThan(index, toInternal(type, value));
            case "greaterOrEqual":
                return predicates.greaterOrEqual(index, toInternal(type, value));
            case "between":
                return predicates.between(index, toInternal(type, value.get(0)), toInternal(type, value.get(1)));
            case "in":
            case "notIn":
                List<Object> literals = new ArrayList<>();
                value.forEach(v -> literals.add(toInternal(type, v)));
                return op.equals("in") ? predicates.in(index, literals) : predicates.notIn(index, literals);
            case "isNull":
                return predicates.isNull(index);
            case "isNotNull":
                return predicates.isNotNull(index);
            default:
                throw new IllegalArgumentException("unknown filter " + op);
        }
    }

    // Every split a streaming scan plans up to the latest snapshot: one plan per snapshot
    // after the starting plan, until the scan's next snapshot is past the latest.
    private static List<Split> streamed(FileStoreTable table, ReadBuilder builder) {
        List<Split> splits = new ArrayList<>();
        StreamTableScan scan = builder.newStreamScan();
        Long latest = table.snapshotManager().latestSnapshotId();
        for (long plans = 0; latest != null && plans <= latest + 2; plans++) {
            Long next = scan.checkpoint();
            if (next != null && next > latest) {
                break;
            }
            TableScan.Plan plan = scan.plan();
            if (plan instanceof SnapshotNotExistPlan && next != null) {
                break;  // (the starting plan of from-snapshot is one too: it only sets the next snapshot)
            }
            splits.addAll(plan.splits());
        }
        return splits;
    }

    private static ArrayNode rowToJson(InternalRow row, RowType type) {
        ArrayNode out = NODES.arrayNode();
        for (int i = 0; i < type.getFieldCount(); i++) {
            DataType fieldType = type.getTypeAt(i);
            out.add(row.isNullAt(i) ? NODES.nullNode() : toJson(InternalRow.createFieldGetter(fieldType, i).getFieldOrNull(row), fieldType));
        }
        return out;
    }

    private static JsonNode toJson(Object value, DataType type) {
        if (value == null) {
            return NODES.nullNode();
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return NODES.booleanNode((Boolean) value);
            case TINYINT:
                return NODES.numberNode((Byte) value);
            case SMALLINT:
                return NODES.numberNode((Short) value);
            case INTEGER:
                return NODES.numberNode((Integer) value);
            case BIGINT:
                return NODES.numberNode((Long) value);
            case FLOAT:
                return floating(((Float) value).doubleValue(), true);
            case DOUBLE:
                return floating((Double) value, false);
            case CHAR:
            case VARCHAR:
                return NODES.textNode(value.toString());
            case BINARY:
            case VARBINARY:
                return NODES.textNode(Base64.getEncoder().encodeToString((byte[]) value));
            case DECIMAL:
                return NODES.textNode(((Decimal) value).toBigDecimal().toPlainString());
            case DATE:
                return NODES.textNode(LocalDate.ofEpochDay((Integer) value).toString());
            case TIME_WITHOUT_TIME_ZONE:
                return NODES.numberNode((Integer) value);
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return NODES.textNode(((Timestamp) value).toLocalDateTime().format(TS));
            case ARRAY: {
                DataType element = ((ArrayType) type).getElementType();
                InternalArray array = (InternalArray) value;
                InternalArray.ElementGetter getter = InternalArray.createElementGetter(element);
                ArrayNode out = NODES.arrayNode();
                for (int i = 0; i < array.size(); i++) {
                    out.add(toJson(getter.getElementOrNull(array, i), element));
                }
                return out;
            }
            case MAP:
            case MULTISET: {
                MapType mapType = (MapType) type;
                InternalMap map = (InternalMap) value;
                InternalArray.ElementGetter keys = InternalArray.createElementGetter(mapType.getKeyType());
                InternalArray.ElementGetter values = InternalArray.createElementGetter(mapType.getValueType());
                ArrayNode out = NODES.arrayNode();
                for (int i = 0; i < map.size(); i++) {
                    ArrayNode pair = NODES.arrayNode();
                    pair.add(toJson(keys.getElementOrNull(map.keyArray(), i), mapType.getKeyType()));
                    pair.add(toJson(values.getElementOrNull(map.valueArray(), i), mapType.getValueType()));
                    out.add(pair);
                }
                return out;
            }
            case ROW:
                return rowToJson((InternalRow) value, (RowType) type);
            default:
                throw new IllegalArgumentException("type not handled by the oracle: " + type);
        }
    }

    private static JsonNode floating(double v, boolean single) {
        if (Double.isNaN(v)) {
            return NODES.textNode("NaN");
        }
        if (Double.isInfinite(v)) {
            return NODES.textNode(v > 0 ? "Infinity" : "-Infinity");
        }
        return single ? NODES.numberNode((float) v) : NODES.numberNode(v);
    }

    // ---------------------------------------------------------------- catalog

    private static void catalog(JsonNode spec) throws Exception {
        Map<String, String> options = new HashMap<>();
        spec.get("catalog").fields().forEachRemaining(e -> options.put(e.getKey(), e.getValue().asText()));
        // Each step sees the registry as it is now, not a cached listing of an earlier step.
        options.putIfAbsent("cache-enabled", "false");
        try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(Options.fromMap(options)))) {
            int index = 0;
            for (JsonNode step : spec.path("steps")) {
                ObjectNode out = NODES.objectNode();
                out.put("step", index++);
                String op = step.get("op").asText();
                out.put("op", op);
                switch (op) {
                    case "create-database":
                        catalog.createDatabase(step.get("name").asText(), step.path("ignore_if_exists").asBoolean(false));
                        break;
                    case "create-table":
                        catalog.createTable(Identifier.fromString(step.get("table").asText()),
                                schema(step.get("create")), step.path("ignore_if_exists").asBoolean(false));
                        break;
                    case "write": {
                        FileStoreTable table = catalogTable(catalog, step);
                        write(table, step);
                        out.put("snapshot", table.snapshotManager().latestSnapshotId());
                        break;
                    }
                    case "writes":
                        writes(catalogTable(catalog, step), step.get("batches"));
                        break;
                    case "read":
                        out.set("rows", rows(catalogTable(catalog, step)));
                        out.put("snapshot", catalogTable(catalog, step).snapshotManager().latestSnapshotId());
                        break;
                    case "list-databases":
                        out.set("names", names(catalog.listDatabases()));
                        break;
                    case "list-tables":
                        out.set("names", names(catalog.listTables(step.get("database").asText())));
                        break;
                    case "rename-table":
                        catalog.renameTable(Identifier.fromString(step.get("from").asText()),
                                Identifier.fromString(step.get("to").asText()), false);
                        break;
                    case "drop-table":
                        catalog.dropTable(Identifier.fromString(step.get("table").asText()), false);
                        break;
                    case "drop-database":
                        catalog.dropDatabase(step.get("name").asText(), false, step.path("cascade").asBoolean(false));
                        break;
                    default:
                        throw new IllegalArgumentException("unknown catalog step " + op);
                }
                emit(out);
            }
        }
    }

    private static FileStoreTable catalogTable(Catalog catalog, JsonNode step) throws Exception {
        return (FileStoreTable) catalog.getTable(Identifier.fromString(step.get("table").asText()));
    }

    // One commit per batch, each announced before it starts and reported after it landed: a
    // test holding the table's lock sees the attempt and no commit until it lets go.
    private static void writes(FileStoreTable table, JsonNode batches) throws Exception {
        int i = 0;
        for (JsonNode rows : batches) {
            ObjectNode attempt = NODES.objectNode();
            attempt.put("attempt", i);
            emit(attempt);
            ObjectNode step = NODES.objectNode();
            step.set("rows", rows);
            write(table, step);
            ObjectNode done = NODES.objectNode();
            done.put("committed", i);
            done.put("snapshot", table.snapshotManager().latestSnapshotId());
            emit(done);
            i++;
        }
    }

    private static ArrayNode rows(FileStoreTable table) throws Exception {
        ReadBuilder builder = table.newReadBuilder();
        RowType rowType = table.rowType();
        ArrayNode out = NODES.arrayNode();
        try (RecordReader<InternalRow> reader = builder.newRead().createReader(builder.newScan().plan().splits())) {
            RecordReader.RecordIterator<InternalRow> batch;
            while ((batch = reader.readBatch()) != null) {
                InternalRow row;
                while ((row = batch.next()) != null) {
                    out.add(rowToJson(row, rowType));
                }
                batch.releaseBatch();
            }
        }
        return out;
    }

    private static ArrayNode names(List<String> names) {
        ArrayNode out = NODES.arrayNode();
        names.stream().sorted().forEach(out::add);
        return out;
    }

    private static void emit(ObjectNode line) throws Exception {
        System.out.println(JSON.writeValueAsString(line));
        System.out.flush();
    }

    // ---------------------------------------------------------------- write side

    private static void run(JsonNode spec) throws Exception {
        String path = spec.get("table").asText();
        if (spec.has("create")) {
            create(path, spec.get("create"));
        }
        ArrayNode snapshots = NODES.arrayNode();
        ArrayNode coordinated = NODES.arrayNode();
        for (JsonNode step : spec.path("steps")) {
            String branch = step.has("branch") ? step.get("branch").asText() : null;
            FileStoreTable table = open(path, branch);
            String op = step.get("op").asText();
            switch (op) {
                case "write":
                    write(table, step);
                    break;
                case "compact":
                    compact(table, step.path("full").asBoolean(true));
                    break;
                case "coordinate":
                    coordinated.add(coordinate(table));
                    break;
                case "expire":
                    expire(table, step);
                    break;
                case "tag":
                    table.createTag(step.get("name").asText(), step.get("snapshot").asLong());
                    break;
                case "create-branch":
                    if (step.has("tag")) {
                        table.createBranch(step.get("name").asText(), step.get("tag").asText());
                    } else {
                        table.createBranch(step.get("name").asText());
                    }
                    break;
                case "set-option":
                    new SchemaManager(table.fileIO(), table.location()).commitChanges(
                            SchemaChange.setOption(step.get("key").asText(), step.get("value").asText()));
                    break;
                default:
                    throw new IllegalArgumentException("unknown step " + op);
            }
            snapshots.add(open(path, branch).snapshotManager().latestSnapshotId());  // the step's branch
        }
        ObjectNode meta = NODES.objectNode();
        meta.set("snapshots", snapshots);
        if (coordinated.size() > 0) {  // only for specs with "coordinate" steps
            meta.set("coordinated", coordinated);
        }
        ObjectNode wrapper = NODES.objectNode();
        wrapper.set("meta", meta);
        System.out.println(JSON.writeValueAsString(wrapper));
    }

    private static void create(String path, JsonNode create) throws Exception {
        LocalFileIO.create().mkdirs(new Path(path));
        new SchemaManager(LocalFileIO.create(), new Path(path)).createTable(schema(create));
    }

    private static Schema schema(JsonNode create) {
        Schema.Builder builder = Schema.newBuilder();
        for (JsonNode field : create.get("fields")) {
            builder.column(field.get("name").asText(), DataTypeJsonParser.parseDataType(field.get("type")));
        }
        builder.partitionKeys(strings(create.path("partitionKeys")));
        builder.primaryKey(strings(create.path("primaryKeys")));
        create.path("options").fields().forEachRemaining(e -> builder.option(e.getKey(), e.getValue().asText()));
        return builder.build();
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asText()));
        return out;
    }

    // One batch commit of the step's rows ("kinds" holds +I/-U/+U/-D per row, default +I).
    // Dynamic-bucket tables get their buckets from Java's own HashBucketAssigner, as Flink's
    // and Spark's writers do, so the HASH index is maintained exactly as Java maintains it.
    private static void write(FileStoreTable table, JsonNode step) throws Exception {
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        if (step.path("overwrite").asBoolean(false)) {
            builder = builder.withOverwrite();
        }
        RowType rowType = table.rowType();
        HashBucketAssigner assigner = null;
        RowPartitionKeyExtractor keys = null;
        if (table.bucketMode() == BucketMode.HASH_DYNAMIC) {
            long target = table.coreOptions().dynamicBucketTargetRowNum();
            assigner = new HashBucketAssigner(table.snapshotManager(), "oracle",
                    table.store().newIndexFileHandler(), 1, 1, 0, target);
            keys = new RowPartitionKeyExtractor(table.schema());
        } else if (table.bucketMode() != BucketMode.HASH_FIXED && table.bucketMode() != BucketMode.BUCKET_UNAWARE) {
            throw new IllegalArgumentException("the oracle does not write bucket mode " + table.bucketMode());
        }
        JsonNode kinds = step.path("kinds");
        try (TableWriteImpl<?> write = newWrite(builder)) {
            int i = 0;
            for (JsonNode values : step.get("rows")) {
                RowKind kind = kinds.isMissingNode() ? RowKind.INSERT : RowKind.fromShortString(kinds.get(i).asText());
                GenericRow row = toRow(values, rowType, kind);
                if (assigner != null) {
                    BinaryRow partition = keys.partition(row);
                    write.write(row, assigner.assign(partition, keys.trimmedPrimaryKey(row).hashCode()));
                } else {
                    write.write(row);
                }
                i++;
            }
            List<CommitMessage> messages = write.prepareCommit();
            try (BatchTableCommit commit = builder.newCommit()) {
                commit.commit(messages);
            }
        }
    }

    // Lookup compaction (deletion vectors, lookup changelog) spills to a local temp directory.
    private static TableWriteImpl<?> newWrite(BatchWriteBuilder builder) {
        TableWriteImpl<?> write = (TableWriteImpl<?>) builder.newWrite();
        write.withIOManager(IOManager.create(System.getProperty("java.io.tmpdir")));
        return write;
    }

    // Compacts every (partition, bucket) that has live files.
    private static void compact(FileStoreTable table, boolean full) throws Exception {
        Map<BinaryRow, Set<Integer>> buckets = new LinkedHashMap<>();
        for (ManifestEntry entry : table.store().newScan().plan().files()) {
            buckets.computeIfAbsent(entry.partition(), p -> new LinkedHashSet<>()).add(entry.bucket());
        }
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        try (TableWriteImpl<?> write = newWrite(builder)) {
            for (Map.Entry<BinaryRow, Set<Integer>> e : buckets.entrySet()) {
                for (int bucket : e.getValue()) {
                    write.compact(e.getKey(), bucket, full);
                }
            }
            List<CommitMessage> messages = write.prepareCommit();
            try (BatchTableCommit commit = builder.newCommit()) {
                commit.commit(messages);
            }
        }
    }

    // A bucket-unaware append table compacted as Flink's and Spark's compaction jobs do: one
    // run of Java's coordinator plans the rewrites, each task compacts its files, one commit.
    // Returns the file names each task rewrote.
    private static ArrayNode coordinate(FileStoreTable table) throws Exception {
        List<UnawareAppendCompactionTask> tasks = new UnawareAppendTableCompactionCoordinator(table, false, null).run();
        ArrayNode rewrites = NODES.arrayNode();
        List<CommitMessage> messages = new ArrayList<>();
        AppendOnlyFileStoreWrite write = (AppendOnlyFileStoreWrite) table.store().newWrite("oracle");
        write.withIOManager(IOManager.create(System.getProperty("java.io.tmpdir")));
        for (UnawareAppendCompactionTask task : tasks) {
            ArrayNode names = NODES.arrayNode();
            task.compactBefore().forEach(f -> names.add(f.fileName()));
            rewrites.add(names);
            messages.add(task.doCompact(table, write));
        }
        write.close();
        if (!messages.isEmpty()) {
            try (BatchTableCommit commit = table.newBatchWriteBuilder().newCommit()) {
                commit.commit(messages);
            }
        }
        return rewrites;
    }

    private static void expire(FileStoreTable table, JsonNode step) {
        ExpireConfig.Builder config = ExpireConfig.builder()
                .snapshotRetainMax(step.path("retain_max").asInt(Integer.MAX_VALUE))
                .snapshotRetainMin(step.path("retain_min").asInt(1))
                .snapshotTimeRetain(Duration.ofMillis(step.path("older_than_ms").asLong(0)));
        // changelog retention (decoupled when larger than the snapshots'): unset = the snapshots'
        if (step.has("changelog_retain_max")) {
            config.changelogRetainMax(step.get("changelog_retain_max").asInt());
        }
        if (step.has("changelog_retain_min")) {
            config.changelogRetainMin(step.get("changelog_retain_min").asInt());
        }
        if (step.has("changelog_older_than_ms")) {
            config.changelogTimeRetain(Duration.ofMillis(step.get("changelog_older_than_ms").asLong()));
        }
        if (step.path("changelogs").asBoolean(false)) {
            table.newExpireChangelog().config(config.build()).expire();  // expire_changelogs
        } else {
            table.newExpireSnapshots().config(config.build()).expire();
        }
    }

    private static GenericRow toRow(JsonNode values, RowType type, RowKind kind) {
        GenericRow row = new GenericRow(kind, type.getFieldCount());
        for (int i = 0; i < type.getFieldCount(); i++) {
            row.setField(i, toInternal(type.getTypeAt(i), values.get(i)));
        }
        return row;
    }

    private static Object toInternal(DataType type, JsonNode v) {
        if (v == null || v.isNull()) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return v.asBoolean();
            case TINYINT:
                return (byte) v.asInt();
            case SMALLINT:
                return (short) v.asInt();
            case INTEGER:
                return v.asInt();
            case BIGINT:
                return v.asLong();
            case FLOAT:
                return (float) parseFloating(v);
            case DOUBLE:
                return parseFloating(v);
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(v.asText());
            case BINARY:
            case VARBINARY:
                return Base64.getDecoder().decode(v.asText());
            case DECIMAL: {
                DecimalType d = (DecimalType) type;
                return Decimal.fromBigDecimal(new BigDecimal(v.asText()), d.getPrecision(), d.getScale());
            }
            case DATE:
                return (int) LocalDate.parse(v.asText()).toEpochDay();
            case TIME_WITHOUT_TIME_ZONE:
                return v.asInt();
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return Timestamp.fromLocalDateTime(LocalDateTime.parse(v.asText()));
            case ARRAY: {
                DataType element = ((ArrayType) type).getElementType();
                Object[] out = new Object[v.size()];
                for (int i = 0; i < v.size(); i++) {
                    out[i] = toInternal(element, v.get(i));
                }
                return new GenericArray(out);
            }
            case MAP: {
                MapType mapType = (MapType) type;
                Map<Object, Object> out = new LinkedHashMap<>();
                for (JsonNode pair : v) {
                    out.put(toInternal(mapType.getKeyType(), pair.get(0)), toInternal(mapType.getValueType(), pair.get(1)));
                }
                return new GenericMap(out);
            }
            case ROW:
                return toRow(v, (RowType) type, RowKind.INSERT);
            default:
                throw new IllegalArgumentException("type not handled by the oracle: " + type);
        }
    }

    private static double parseFloating(JsonNode v) {
        return v.isTextual() ? Double.parseDouble(v.asText()) : v.asDouble();
    }
}
