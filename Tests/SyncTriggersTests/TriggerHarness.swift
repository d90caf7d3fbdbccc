import PartitionSync
import SyncProtocol
import SyncTesting

func key(_ collection: String, _ id: String) -> ObjectKey { try! ObjectKey(collection: collection, id: id) }
func partition(_ text: String) -> Partition { try! Partition(text) }
func path(_ text: String) -> Path { try! Path(parsing: text) }

typealias TriggerHarness = TestTriggers
