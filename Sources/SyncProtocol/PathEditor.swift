/// Changes the value at one ``Path`` inside a body, following the rules of the operations:
/// `set`, `increment` and `arrayAppend` create missing object fields on the way; `unset` and
/// `arrayRemove` do nothing where the path leads nowhere; an index or selector that matches
/// no element is `path_not_found` for the creating edits; running through a value of the
/// wrong kind is `type_mismatch`.
struct PathEditor {
    enum Edit {
        case set(JSONValue)
        case unset
        case increment(JSONValue)
        case append(JSONValue)
        case remove(JSONValue)

        var createsMissing: Bool {
            switch self {
            case .set, .increment, .append: true
            case .unset, .remove: false
            }
        }
    }

    let key: ObjectKey
    let path: Path

    func edit(_ root: inout JSONValue, with edit: Edit) throws(SyncError) {
        try self.edit(&root, at: path.components[...], with: edit)
    }

    private func edit(_ value: inout JSONValue, at components: ArraySlice<Path.Component>, with edit: Edit)
        throws(SyncError)
    {
        let component = components.first!
        let rest = components.dropFirst()
        switch (component, value) {
        case (.field(let name), .object(var fields)):
            // Take the container out of `value` so it is edited in place, not copied.
            value = .null
            defer { value = .object(fields) }
            let child = fields[name]
            if rest.isEmpty {
                fields[name] = try apply(edit, to: child)
                return
            }
            var next: JSONValue
            if let child {
                next = child
            } else if !edit.createsMissing {
                return
            } else if case .field = rest.first! {
                next = .object([:])
            } else {
                throw mismatch(.pathNotFound, "there is no array at '\(prefix(before: rest))'")
            }
            fields[name] = nil
            defer { fields[name] = next }
            try self.edit(&next, at: rest, with: edit)
        case (.index(let position), .array(var elements)):
            value = .null
            defer { value = .array(elements) }
            guard position < elements.count else {
                if edit.createsMissing {
                    throw mismatch(.pathNotFound, "index \(position) is beyond the \(elements.count) elements of '\(prefix(before: components))'")
                }
                return
            }
            try self.edit(element: position, of: &elements, rest: rest, with: edit)
        case (.match(let field, let wanted), .array(var elements)):
            value = .null
            defer { value = .array(elements) }
            guard let position = elements.firstIndex(where: { $0[field] == .string(wanted) }) else {
                if edit.createsMissing {
                    throw mismatch(.pathNotFound, "no element of '\(prefix(before: components))' has \(field) = \"\(wanted)\"")
                }
                return
            }
            try self.edit(element: position, of: &elements, rest: rest, with: edit)
        case (.field, _):
            throw mismatch(.typeMismatch, "'\(prefix(before: components))' is not an object")
        case (.index, _), (.match, _):
            throw mismatch(.typeMismatch, "'\(prefix(before: components))' is not an array")
        }
    }

    private func edit(element position: Int, of elements: inout [JSONValue], rest: ArraySlice<Path.Component>, with edit: Edit)
        throws(SyncError)
    {
        if rest.isEmpty {
            if let result = try apply(edit, to: elements[position]) {
                elements[position] = result
            } else {
                elements.remove(at: position)
            }
        } else {
            var element = elements[position]
            elements[position] = .null
            try self.edit(&element, at: rest, with: edit)
            elements[position] = element
        }
    }

    /// The new value of the addressed slot, or `nil` to remove it.
    private func apply(_ edit: Edit, to current: JSONValue?) throws(SyncError) -> JSONValue? {
        switch edit {
        case .set(let value):
            return value
        case .unset:
            return nil
        case .increment(let by):
            return try increment(current ?? .int(0), by: by)
        case .append(let element):
            switch current {
            case nil: return .array([element])
            case .array(var elements)?:
                elements.append(element)
                return .array(elements)
            case let other?:
                throw mismatch(.typeMismatch, "'\(path)' is \(kind(of: other)), not an array")
            }
        case .remove(let match):
            switch current {
            case nil: return nil
            case .array(let elements)?:
                if case .object(let pattern) = match {
                    return .array(elements.filter { !$0.contains(fieldsOf: pattern) })
                }
                return .array(elements.filter { !$0.isEquivalent(to: match) })
            case let other?:
                throw mismatch(.typeMismatch, "'\(path)' is \(kind(of: other)), not an array")
            }
        }
    }

    private func increment(_ current: JSONValue, by: JSONValue) throws(SyncError) -> JSONValue {
        switch (current, by) {
        case (.int(let a), .int(let b)):
            let (sum, overflow) = a.addingReportingOverflow(b)
            guard !overflow else {
                throw mismatch(.invalidOperation, "incrementing '\(path)' overflows a 64-bit integer")
            }
            return .int(sum)
        default:
            guard let a = current.doubleValue else {
                throw mismatch(.typeMismatch, "'\(path)' is \(kind(of: current)), not a number")
            }
            guard let b = by.doubleValue else {
                throw mismatch(.invalidOperation, "'by' is not a number")
            }
            let sum = a + b
            guard sum.isFinite else {
                throw mismatch(.invalidOperation, "incrementing '\(path)' leaves the range of numbers")
            }
            return .double(sum)
        }
    }

    private func mismatch(_ code: SyncError.Code, _ message: String) -> SyncError {
        SyncError(code, "\(key): \(message)")
    }

    private func prefix(before rest: ArraySlice<Path.Component>) -> String {
        let used = Array(path.components[..<rest.startIndex])
        return (try? Path(used).description) ?? path.description
    }

    private func kind(of value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .int, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
