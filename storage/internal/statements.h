// Internal: the SQL the SQLite store runs. Each constant's address is its key
// in the store's prepared-statement cache. Every value is a bound parameter.
#pragma once

namespace tune::storage_internal {

constexpr const char* kInsertExperiment =
    "INSERT INTO experiments(name, status, metric, mode, spec_json, spec_source, searcher_state,"
    " scheduler_state, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)";
constexpr const char* kFindExperiment =
    "SELECT id, name, status, metric, mode, spec_json, spec_source, searcher_state,"
    " scheduler_state, created_at, updated_at FROM experiments WHERE name = ?";
constexpr const char* kListExperiments =
    "SELECT id, name, status, metric, mode, spec_json, spec_source, searcher_state,"
    " scheduler_state, created_at, updated_at FROM experiments ORDER BY id";
constexpr const char* kSetExperimentStatus =
    "UPDATE experiments SET status = ?, updated_at = ? WHERE id = ?";
constexpr const char* kSetSearcherState =
    "UPDATE experiments SET searcher_state = ?, updated_at = ? WHERE id = ?";
constexpr const char* kSetSchedulerState =
    "UPDATE experiments SET scheduler_state = ?, updated_at = ? WHERE id = ?";
constexpr const char* kDropSchedulerStateParts = "DELETE FROM scheduler_state_parts WHERE experiment_id = ?";
constexpr const char* kDropSchedulerStatePartsBefore =
    "DELETE FROM scheduler_state_parts WHERE id IN (SELECT id FROM scheduler_state_parts"
    " WHERE experiment_id = ? AND id < ? ORDER BY id LIMIT ?)";
constexpr const char* kInsertSchedulerStatePart =
    "INSERT INTO scheduler_state_parts(experiment_id, state_json, created_at) VALUES (?,?,?)";
constexpr const char* kListSchedulerStateParts =
    "SELECT state_json FROM scheduler_state_parts WHERE experiment_id = ? ORDER BY id";
constexpr const char* kInsertTrial =
    "INSERT INTO trials(experiment_id, trial_index, status, config_json, attempts,"
    " last_iteration, created_at) VALUES (?, ?, 'PENDING', ?, 0, 0, ?)";
constexpr const char* kInsertStartedTrial =
    "INSERT INTO trials(experiment_id, trial_index, status, config_json, attempts,"
    " last_iteration, created_at, started_at) VALUES (?, ?, 'RUNNING', ?, 1, 0, ?, ?)";
constexpr const char* kInsertParam =
    "INSERT OR IGNORE INTO params(trial_id, name, value_json, value_real, value_text)"
    " VALUES (?,?,?,?,?)";
constexpr const char* kFindLease =
    "SELECT host, pid, started_at, heartbeat_at FROM driver_leases WHERE experiment_id = ?";
constexpr const char* kPutLease =
    "INSERT OR REPLACE INTO driver_leases(experiment_id, host, pid, started_at, heartbeat_at) VALUES (?,?,?,?,?)";
constexpr const char* kRenewLease =
    "UPDATE driver_leases SET heartbeat_at = ? WHERE experiment_id = ? AND host = ? AND pid = ? AND started_at = ?";
constexpr const char* kReleaseLease =
    "DELETE FROM driver_leases WHERE experiment_id = ? AND host = ? AND pid = ? AND started_at = ?";
// ?1 status, ?2 time, ?3 error ('' keeps the old one), ?4 id. A start clears
// ended_at so a retried trial does not look finished while it runs.
// ?5 / ?6: the trial's last iteration and result, or NULL to keep them.
constexpr const char* kSetTrialStatus =
    "UPDATE trials SET status = ?1,"
    " started_at = CASE WHEN ?1 = 'RUNNING' THEN ?2 ELSE started_at END,"
    " attempts = attempts + (?1 = 'RUNNING'),"
    " ended_at = CASE WHEN ?1 IN ('TERMINATED', 'ERROR') THEN ?2"
    "                 WHEN ?1 = 'RUNNING' THEN NULL ELSE ended_at END,"
    " error = CASE WHEN ?3 <> '' THEN ?3 ELSE error END,"
    " last_iteration = COALESCE(?5, last_iteration),"
    " last_result_json = CASE WHEN ?5 IS NULL THEN last_result_json ELSE ?6 END"
    " WHERE id = ?4";
constexpr const char* kListTrials =
    "SELECT id, experiment_id, trial_index, status, config_json, attempts, error,"
    " last_iteration, last_result_json, created_at, started_at, ended_at FROM trials"
    " WHERE experiment_id = ? ORDER BY trial_index";
constexpr const char* kFindTrial =
    "SELECT id, experiment_id, trial_index, status, config_json, attempts, error,"
    " last_iteration, last_result_json, created_at, started_at, ended_at FROM trials"
    " WHERE experiment_id = ? AND trial_index = ?";
constexpr const char* kInsertResult =
    "INSERT INTO results(trial_id, iteration, attempt, time, metrics_json) VALUES (?,?,?,?,?)";
constexpr const char* kUpdateLastResult =
    "UPDATE trials SET last_iteration = ?, last_result_json = ? WHERE id = ?";
// Row values in an UPDATE: SQLite 3.15 and later (Debian 12 has 3.40).
constexpr const char* kRefreshLastResults =
    "UPDATE trials SET (last_iteration, last_result_json) ="
    " (SELECT r.iteration, r.metrics_json FROM results r WHERE r.trial_id = trials.id ORDER BY r.id DESC LIMIT 1)"
    " WHERE experiment_id = ? AND status NOT IN ('TERMINATED', 'ERROR')"
    " AND EXISTS (SELECT 1 FROM results r WHERE r.trial_id = trials.id)";
constexpr const char* kListResults =
    "SELECT id, trial_id, iteration, attempt, time, metrics_json FROM results"
    " WHERE trial_id = ? ORDER BY id";
constexpr const char* kInsertCheckpoint =
    "INSERT INTO checkpoints(trial_id, iteration, path, score, deleted, created_at)"
    " VALUES (?,?,?,?,0,?)";
constexpr const char* kDeleteCheckpoint = "UPDATE checkpoints SET deleted = 1 WHERE id = ?";
constexpr const char* kListCheckpoints =
    "SELECT id, trial_id, iteration, path, score, deleted, created_at FROM checkpoints"
    " WHERE trial_id = ? AND deleted = 0 ORDER BY id";
constexpr const char* kListExperimentCheckpoints =
    "SELECT c.id, c.trial_id, c.iteration, c.path, c.score, c.deleted, c.created_at FROM checkpoints c"
    " JOIN trials t ON t.id = c.trial_id WHERE t.experiment_id = ? AND c.deleted = 0 ORDER BY c.trial_id, c.id";
constexpr const char* kSavepoint = "SAVEPOINT rows";
constexpr const char* kRelease = "RELEASE rows";
constexpr const char* kRollbackTo = "ROLLBACK TO rows";
constexpr const char* kInsertEvent =
    "INSERT INTO events(experiment_id, trial_id, time, kind, detail_json) VALUES (?,?,?,?,?)";

constexpr const char* kSetTrialConfig = "UPDATE trials SET config_json = ? WHERE id = ?";
constexpr const char* kDeleteParams = "DELETE FROM params WHERE trial_id = ?";
constexpr const char* kInsertExploit =
    "INSERT INTO exploits(trial_id, donor_trial_id, iteration, donor_iteration, checkpoint_path,"
    " old_config_json, new_config_json, time) VALUES (?,?,?,?,?,?,?,?)";
constexpr const char* kListExploits =
    "SELECT x.id, x.trial_id, x.donor_trial_id, x.iteration, x.donor_iteration, x.checkpoint_path,"
    " x.old_config_json, x.new_config_json, x.time FROM exploits x JOIN trials t ON t.id = x.trial_id"
    " WHERE t.experiment_id = ? ORDER BY x.id";

}  // namespace tune::storage_internal
