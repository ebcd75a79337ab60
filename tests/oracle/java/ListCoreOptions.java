import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.TreeSet;
import org.apache.paimon.options.ConfigOption;

public class ListCoreOptions {
    public static void main(String[] args) throws Exception {
        TreeSet<String> keys = new TreeSet<>();
        for (String name : args) {
            for (Field f : Class.forName(name).getFields()) {
                if (Modifier.isStatic(f.getModifiers()) && ConfigOption.class.isAssignableFrom(f.getType())) {
                    keys.add(((ConfigOption<?>) f.get(null)).key());
                }
            }
        }
        keys.forEach(System.out::println);
    }
}
