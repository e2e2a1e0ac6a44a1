// APNs
