package lakeweed;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableScan;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.ExpressionParser;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.rest.RESTCatalog;

/**
 * Scans one table with Iceberg Java's RESTCatalog and prints what it planned and read.
 *
 * <pre>
 * java -cp 'lib/*:iceberg-java-scan.jar' lakeweed.ScanTable --uri URI --warehouse W --s3 URL
 *     --table ns.t [--mode server|client|table] [--select id,status] [--filter JSON ...]
 *     [--credential key:secret | --sigv4 key:secret]
 * </pre>
 *
 * <p>--sigv4 signs every REST call with AWS SigV4 (rest.sigv4-enabled, signing name s3tables) as
 * that S3 identity instead of an OAuth2 credential.
 *
 * <p>--mode is the catalog property scan-planning-mode ("table": unset, so the table's LoadTable
 * config decides). --filter is Iceberg expression JSON (the REST spec's form). One JSON line per
 * filter: {"files": data files planned, "scan": the TableScan class, "ids": [ids read, sorted]}.
 */
public class ScanTable {
  public static void main(String[] args) throws Exception {
    Map<String, String> opt = new HashMap<>();
    List<String> filters = new ArrayList<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (args[i].equals("--filter")) {
        filters.add(args[i + 1]);
      } else {
        opt.put(args[i].substring(2), args[i + 1]);
      }
    }
    Map<String, String> props = new HashMap<>();
    props.put("uri", opt.get("uri"));
    props.put("warehouse", opt.get("warehouse"));
    props.put("io-impl", "org.apache.iceberg.aws.s3.S3FileIO");
    props.put("s3.endpoint", opt.get("s3"));
    props.put("s3.path-style-access", "true");
    props.put("s3.access-key-id", opt.getOrDefault("key", "lakeweed"));
    props.put("s3.secret-access-key", opt.getOrDefault("secret", "lakeweed"));
    props.put("client.region", "us-east-1");
    String mode = opt.getOrDefault("mode", "server");
    if (!mode.equals("table")) {
      props.put("scan-planning-mode", mode);
    }
    if (opt.containsKey("sigv4")) {
      String[] kv = opt.get("sigv4").split(":", 2);
      props.put("rest.sigv4-enabled", "true");
      props.put("rest.signing-name", "s3tables");
      props.put("rest.signing-region", "us-east-1");
      props.put("rest.access-key-id", kv[0]);
      props.put("rest.secret-access-key", kv[1]);
      props.put("s3.access-key-id", kv[0]);
      props.put("s3.secret-access-key", kv[1]);
    } else if (opt.containsKey("credential")) {
      props.put("credential", opt.get("credential"));
    }
    RESTCatalog catalog = new RESTCatalog();
    catalog.initialize("lakeweed", props);
    Table table = catalog.loadTable(TableIdentifier.parse(opt.get("table")));
    List<String> select = List.of(opt.getOrDefault("select", "id").split(","));
    if (filters.isEmpty()) {
      filters.add("true");
    }
    for (String f : filters) {
      Expression expr = f.equals("true") ? Expressions.alwaysTrue() : ExpressionParser.fromJson(f);
      TableScan scan = table.newScan().filter(expr).select(select);
      Set<String> files = new HashSet<>();
      try (CloseableIterable<FileScanTask> tasks = scan.planFiles()) {
        for (FileScanTask t : tasks) {
          files.add(t.file().location());
        }
      }
      List<Long> ids = new ArrayList<>();
      try (CloseableIterable<Record> rows =
          IcebergGenerics.read(table).where(expr).select(select.toArray(new String[0])).build()) {
        for (Record r : rows) {
          ids.add((Long) r.getField("id"));
        }
      }
      Collections.sort(ids);
      StringBuilder out = new StringBuilder();
      out.append("{\"files\":").append(files.size());
      out.append(",\"scan\":\"").append(scan.getClass().getSimpleName()).append("\",\"ids\":[");
      for (int i = 0; i < ids.size(); i++) {
        if (i > 0) {
          out.append(',');
        }
        out.append(ids.get(i));
      }
      out.append("]}");
      System.out.println(out);
      System.out.flush();
    }
    catalog.close();
  }
}
