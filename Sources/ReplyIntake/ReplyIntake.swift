// ReplyIntake
