/// The fields of a reply body (contract 4) before their own formats are
/// checked: what `ReplyRules.decode` reads out of the JSON object.
struct ReplyFields: Hashable {
    var delivery: Int64
    var token: String
    var action: String
    var occurredAt: String
    var replyID: String
    var text: String?
}
