/// One device's values, as a plan renders them.
struct PlanContext {
    let variables: [Template.Variable]
    let values: PersonalValues?
    let campaignName: String
    let locale: String
    let formats: TemplateFormats

    func value(slot: Int) -> String? {
        let v = variables[slot]
        switch v.root {
        case .campaign: return campaignName
        case .device where v.path == ["locale"]: return locale
        default:
            guard let values, slot < values.values.count else { return nil }
            return values.values[slot]
        }
    }
}
